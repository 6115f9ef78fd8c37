"""A file upload's multipart body for upload.lua: the kyc form's name and a 16 KiB PNG (the same
bytes every time), boundary "cloakcompareboundary". Usage: upload-body.py OUT"""
import struct, sys, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
rows = b"".join(b"\x00" + bytes((x * 7 + y * 13) % 256 for x in range(3 * 64)) for y in range(85))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 85, 8, 2, 0, 0, 0)) \
    + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b"")
b = b"cloakcompareboundary"
body = (b"--" + b + b'\r\nContent-Disposition: form-data; name="kyc.full_name"\r\n\r\nJane Doe\r\n'
        + b"--" + b + b'\r\nContent-Disposition: form-data; name="kyc.document"; filename="d.png"\r\n'
        + b"Content-Type: image/png\r\n\r\n" + png + b"\r\n--" + b + b"--\r\n")
open(sys.argv[1], "wb").write(body)
