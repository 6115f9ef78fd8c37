/*
 * The SQLite floor of a new PERSISTENT alias: what the vault thread's store work costs with
 * nothing of Cloak around it. Same schema, pragmas and statements as SQLiteAliasStore (keep
 * them in step), one transaction per batch and one savepoint per record as VaultExecutor runs
 * them, random fingerprints and UUID-shaped aliases (random by nature), record ids that grow
 * as Cloak's do. Prints this process's CPU time (user + system, getrusage) per record.
 *
 *   sqlite-floor DB_PATH RECORDS BATCH
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void check(sqlite3 *db, int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static void exec(sqlite3 *db, const char *sql) { check(db, sqlite3_exec(db, sql, 0, 0, 0), sql); }

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s = 0;
    check(db, sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, 0), sql);
    return s;
}

static void run(sqlite3 *db, sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    check(db, rc, sqlite3_sql(s));
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

static void random_bytes(unsigned char *out, int n) {
    for (int i = 0; i < n; i++) out[i] = (unsigned char)(random() >> 7);
}

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DB_PATH RECORDS BATCH\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    long records = atol(argv[2]), batch = atol(argv[3]);
    char name[4096];
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
        unlink(name);
    }
    sqlite3 *db = 0;
    check(db, sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 0), "open");
    exec(db, "PRAGMA journal_mode=WAL");
    exec(db, "PRAGMA synchronous=FULL");
    exec(db, "PRAGMA foreign_keys=ON");
    exec(db, "PRAGMA cache_size=-16384");
    exec(db, "PRAGMA wal_autocheckpoint=8192");
    exec(db, "PRAGMA temp_store=MEMORY");
    exec(db,
         "CREATE TABLE records (id TEXT PRIMARY KEY, fingerprint BLOB UNIQUE, key_id TEXT NOT NULL,"
         " nonce BLOB NOT NULL, ciphertext BLOB NOT NULL, tag BLOB NOT NULL, storage TEXT NOT NULL,"
         " classifiers TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER);"
         "CREATE TABLE aliases (alias TEXT PRIMARY KEY, record_id TEXT NOT NULL REFERENCES records(id)"
         " ON DELETE CASCADE, format TEXT NOT NULL, UNIQUE (record_id, format));"
         "ALTER TABLE aliases ADD COLUMN mac BLOB;"
         "CREATE INDEX records_by_expiry ON records(expires_at) WHERE expires_at IS NOT NULL;");
    sqlite3_stmt *begin = prepare(db, "BEGIN IMMEDIATE"), *commit = prepare(db, "COMMIT");
    sqlite3_stmt *savepoint = prepare(db, "SAVEPOINT request"), *release = prepare(db, "RELEASE request");
    sqlite3_stmt *find = prepare(db, "SELECT id, fingerprint, key_id, nonce, ciphertext, tag, storage, classifiers,"
                                     " created_at, expires_at FROM records WHERE fingerprint = ?1");
    sqlite3_stmt *insert = prepare(db, "INSERT INTO records (id, fingerprint, key_id, nonce, ciphertext, tag, storage,"
                                       " classifiers, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    sqlite3_stmt *alias = prepare(db, "INSERT INTO aliases (alias, record_id, format, mac) VALUES (?1, ?2, ?3, ?4)");

    unsigned char fingerprint[32], nonce[12], ciphertext[19], tag[16], mac[32], r[16];
    char id[48], text[48];
    long sequence = 0;
    double start = cpu_seconds();
    for (long done = 0; done < records;) {
        run(db, begin);
        for (long i = 0; i < batch && done < records; i++, done++) {
            run(db, savepoint);
            random_bytes(fingerprint, 32);
            sqlite3_bind_blob(find, 1, fingerprint, 32, SQLITE_STATIC);
            run(db, find);
            snprintf(id, sizeof id, "rec_%010ld%012ld", 1790000000L + done / 20000, ++sequence);
            random_bytes(nonce, 12), random_bytes(ciphertext, 19), random_bytes(tag, 16), random_bytes(mac, 32);
            sqlite3_bind_text(insert, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_blob(insert, 2, fingerprint, 32, SQLITE_STATIC);
            sqlite3_bind_text(insert, 3, "k1", -1, SQLITE_STATIC);
            sqlite3_bind_blob(insert, 4, nonce, 12, SQLITE_STATIC);
            sqlite3_bind_blob(insert, 5, ciphertext, 19, SQLITE_STATIC);
            sqlite3_bind_blob(insert, 6, tag, 16, SQLITE_STATIC);
            sqlite3_bind_text(insert, 7, "PERSISTENT", -1, SQLITE_STATIC);
            sqlite3_bind_text(insert, 8, "", -1, SQLITE_STATIC);
            sqlite3_bind_int64(insert, 9, 1790000000L);
            sqlite3_bind_null(insert, 10);
            run(db, insert);
            random_bytes(r, 16);
            snprintf(text, sizeof text, "%08x-%04x-4%03x-a%03x-%012llx", *(unsigned *)r, r[4] << 8 | r[5],
                     (r[6] << 8 | r[7]) & 0xFFF, (r[8] << 8 | r[9]) & 0xFFF, *(unsigned long long *)(r + 8) & 0xFFFFFFFFFFFFULL);
            sqlite3_bind_text(alias, 1, text, -1, SQLITE_STATIC);
            sqlite3_bind_text(alias, 2, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(alias, 3, "UUID", -1, SQLITE_STATIC);
            sqlite3_bind_blob(alias, 4, mac, 32, SQLITE_STATIC);
            run(db, alias);
            run(db, release);
        }
        run(db, commit);
    }
    double cpu = cpu_seconds() - start;
    printf("sqlite floor: %ld records in batches of %ld: %.1f us CPU per record\n", records, batch, cpu / records * 1e6);
    return 0;
}
