import CPKCS11
import Synchronization

/// A PKCS#11 module (a shared library such as SoftHSM's or an HSM vendor's), loaded once per
/// path and process with `dlopen`, initialised once (`C_Initialize` with OS locking: its
/// functions may be called from any thread), never unloaded.
final class PKCS11Module: @unchecked Sendable {
    /// The module's function list: valid for the life of the process.
    let functions: UnsafeMutablePointer<CK_FUNCTION_LIST>
    let path: String

    private init(path: String, functions: UnsafeMutablePointer<CK_FUNCTION_LIST>) {
        self.path = path
        self.functions = functions
    }

    private static let loaded = Mutex<[String: PKCS11Module]>([:])

    /// The module at `path`, loaded and initialised on first use.
    static func load(_ path: String) throws(PKCS11Error) -> PKCS11Module {
        let result = loaded.withLock { modules -> Result<PKCS11Module, PKCS11Error> in
            if let module = modules[path] { return .success(module) }
            guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
                return .failure(PKCS11Error(.moduleUnloadable, "cannot load the PKCS#11 module \(path)"))
            }
            guard let symbol = dlsym(handle, "C_GetFunctionList") else {
                return .failure(
                    PKCS11Error(.moduleUnloadable, "\(path) is not a PKCS#11 module (no C_GetFunctionList)"))
            }
            let getFunctionList = unsafeBitCast(symbol, to: CK_C_GetFunctionList.self)
            var list: UnsafeMutablePointer<CK_FUNCTION_LIST>?
            let rv = getFunctionList(&list)
            guard rv == CKR_OK, let list else { return .failure(.call("C_GetFunctionList", rv)) }
            var arguments = CK_C_INITIALIZE_ARGS()
            arguments.flags = cloak_CKF_OS_LOCKING_OK
            let initialized = withUnsafeMutablePointer(to: &arguments) { list.pointee.C_Initialize($0) }
            guard initialized == CKR_OK || initialized == CKR_CRYPTOKI_ALREADY_INITIALIZED else {
                return .failure(.call("C_Initialize", initialized))
            }
            let module = PKCS11Module(path: path, functions: list)
            modules[path] = module
            return .success(module)
        }
        return try result.get()
    }

    /// The slot holding the token labelled `label` (the label is 32 bytes, space-padded).
    func slot(tokenLabel label: String) throws(PKCS11Error) -> CK_SLOT_ID {
        var count: CK_ULONG = 0
        var rv = functions.pointee.C_GetSlotList(CK_BBOOL(CK_TRUE), nil, &count)
        guard rv == CKR_OK else { throw .call("C_GetSlotList", rv) }
        var slots = [CK_SLOT_ID](repeating: 0, count: Int(count))
        rv = functions.pointee.C_GetSlotList(CK_BBOOL(CK_TRUE), &slots, &count)
        guard rv == CKR_OK else { throw .call("C_GetSlotList", rv) }
        for slot in slots.prefix(Int(count)) {
            var info = CK_TOKEN_INFO()
            guard functions.pointee.C_GetTokenInfo(slot, &info) == CKR_OK else { continue }
            let padded = withUnsafeBytes(of: info.label) { Array($0) }
            var end = padded.count
            while end > 0 && (padded[end - 1] == 0x20 || padded[end - 1] == 0) { end -= 1 }
            if String(decoding: padded[..<end], as: UTF8.self) == label { return slot }
        }
        throw PKCS11Error(.tokenNotFound, "no token labelled \"\(label)\" in \(path)")
    }

    /// A session on the token `uri` names, logged in as its user with `pin` (wiped here once
    /// used). `readWrite` for a session that makes objects (the vault's key).
    static func login(_ uri: PKCS11URI, pin: [UInt8], readWrite: Bool) throws(PKCS11Error)
        -> (PKCS11Module, CK_SESSION_HANDLE)
    {
        let module = try PKCS11Module.load(uri.modulePath)
        let slot = try module.slot(tokenLabel: uri.tokenLabel)
        var session: CK_SESSION_HANDLE = 0
        let flags = cloak_CKF_SERIAL_SESSION | (readWrite ? cloak_CKF_RW_SESSION : 0)
        var rv = module.functions.pointee.C_OpenSession(slot, flags, nil, nil, &session)
        guard rv == CKR_OK else { throw .call("C_OpenSession", rv) }
        var pin = pin
        rv = module.functions.pointee.C_Login(session, CK_USER_TYPE(CKU_USER), &pin, CK_ULONG(pin.count))
        wipe(&pin)
        guard rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN else {
            _ = module.functions.pointee.C_CloseSession(session)
            throw .call("C_Login", rv)
        }
        return (module, session)
    }
}
