/* The bytes of every file under Sources/CloakService/{Elements,Console}/Assets (see
   include/embedded_assets.h). A file added there is listed here too: ElementsTests checks that
   each file in those folders is served. */
#pragma clang diagnostic ignored "-Wc23-extensions"
#include "embedded_assets.h"

/* Each file's bytes and a NUL; `suffix` keeps an empty file valid C. */
#define ASSET(name, symbol) { name, symbol, sizeof(symbol) - 1 }

static const unsigned char elements_cloak_js[] = {
#embed "../CloakService/Elements/Assets/cloak.js" suffix(, )
    0};

static const unsigned char elements_controller_html[] = {
#embed "../CloakService/Elements/Assets/controller.html" suffix(, )
    0};

static const unsigned char elements_controller_js[] = {
#embed "../CloakService/Elements/Assets/controller.js" suffix(, )
    0};

static const unsigned char elements_field_html[] = {
#embed "../CloakService/Elements/Assets/field.html" suffix(, )
    0};

static const unsigned char elements_field_js[] = {
#embed "../CloakService/Elements/Assets/field.js" suffix(, )
    0};

static const unsigned char elements_file_html[] = {
#embed "../CloakService/Elements/Assets/file.html" suffix(, )
    0};

static const unsigned char elements_file_js[] = {
#embed "../CloakService/Elements/Assets/file.js" suffix(, )
    0};

static const unsigned char elements_frame_common_js[] = {
#embed "../CloakService/Elements/Assets/frame-common.js" suffix(, )
    0};

static const unsigned char elements_frame_css[] = {
#embed "../CloakService/Elements/Assets/frame.css" suffix(, )
    0};

static const unsigned char elements_reveal_html[] = {
#embed "../CloakService/Elements/Assets/reveal.html" suffix(, )
    0};

static const unsigned char elements_reveal_js[] = {
#embed "../CloakService/Elements/Assets/reveal.js" suffix(, )
    0};

static const unsigned char elements_rules_js[] = {
#embed "../CloakService/Elements/Assets/rules.js" suffix(, )
    0};

static const cloak_embedded_asset elements_assets[] = {
    ASSET("cloak.js", elements_cloak_js),
    ASSET("controller.html", elements_controller_html),
    ASSET("controller.js", elements_controller_js),
    ASSET("field.html", elements_field_html),
    ASSET("field.js", elements_field_js),
    ASSET("file.html", elements_file_html),
    ASSET("file.js", elements_file_js),
    ASSET("frame-common.js", elements_frame_common_js),
    ASSET("frame.css", elements_frame_css),
    ASSET("reveal.html", elements_reveal_html),
    ASSET("reveal.js", elements_reveal_js),
    ASSET("rules.js", elements_rules_js),
};

const cloak_embedded_asset *cloak_elements_assets(size_t *count) {
    *count = sizeof(elements_assets) / sizeof(elements_assets[0]);
    return elements_assets;
}

static const unsigned char console_console_css[] = {
#embed "../CloakService/Console/Assets/console.css" suffix(, )
    0};

static const unsigned char console_console_html[] = {
#embed "../CloakService/Console/Assets/console.html" suffix(, )
    0};

static const unsigned char console_console_js[] = {
#embed "../CloakService/Console/Assets/console.js" suffix(, )
    0};

static const unsigned char console_favicon_svg[] = {
#embed "../CloakService/Console/Assets/favicon.svg" suffix(, )
    0};

static const cloak_embedded_asset console_assets[] = {
    ASSET("console.css", console_console_css),
    ASSET("console.html", console_console_html),
    ASSET("console.js", console_console_js),
    ASSET("favicon.svg", console_favicon_svg),
};

const cloak_embedded_asset *cloak_console_assets(size_t *count) {
    *count = sizeof(console_assets) / sizeof(console_assets[0]);
    return console_assets;
}
