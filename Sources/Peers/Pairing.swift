import CTorrent
import Foundation

/// A household's authority and its machines' certificates (`bahost peers pair`, docs/PEERS.md), made with OpenSSL
/// through the shim. [any thread]
public enum Pairing {
    /// A certificate and its key, PEM.
    public struct Issued: Sendable, Hashable {
        public var certificate: String
        public var key: String

        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// A new household authority named `name`.
    public static func makeAuthority(name: String) throws(SwarmError) -> Issued {
        try issue { certificate, certificateSize, key, keySize, error, errorSize in
            bahost_pairing_make_authority(name, certificate, certificateSize, key, keySize, error, errorSize)
        }
    }

    /// This machine's certificate, named `name`, signed by `authority`.
    public static func certify(authority: Issued, name: String) throws(SwarmError) -> Issued {
        try issue { certificate, certificateSize, key, keySize, error, errorSize in
            bahost_pairing_certify(
                authority.certificate, authority.key, name, certificate, certificateSize, key, keySize, error,
                errorSize)
        }
    }

    /// Whether `certificate` was signed by `authority`, and `key` is its own.
    public static func check(authority: String, certificate: String, key: String) -> Bool {
        bahost_pairing_check(authority, certificate, key) == 1
    }

    /// A certificate's SHA-256 fingerprint in hex pairs ("AB:CD:…"), as `openssl x509 -fingerprint` gives it; nil
    /// for what is not a certificate.
    public static func fingerprint(_ certificate: String) -> String? {
        var digest = [UInt8](repeating: 0, count: 32)
        guard bahost_pairing_fingerprint(certificate, &digest) == 0 else { return nil }
        return digest.map { String(format: "%02X", $0) }.joined(separator: ":")
    }

    private static func issue(
        _ make: (UnsafeMutablePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int, UnsafeMutablePointer<CChar>, Int)
            -> Int32
    ) throws(SwarmError) -> Issued {
        var certificate = [CChar](repeating: 0, count: 8192)
        var key = [CChar](repeating: 0, count: 8192)
        var error = [CChar](repeating: 0, count: 512)
        let made = make(&certificate, certificate.count, &key, key.count, &error, error.count)
        func text(_ buffer: [CChar]) -> String {
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard made == 0 else { throw SwarmError(text(error)) }
        return Issued(certificate: text(certificate), key: text(key))
    }
}
