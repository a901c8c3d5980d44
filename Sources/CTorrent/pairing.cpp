// The pairing half of bahost_torrent.h: a household's authority and its machines' certificates, with OpenSSL
// (which libtorrent's SSL torrents use). No library makes X.509 certificates more simply from C; the whole of it is
// the few calls below.
#include "bahost_torrent.h"

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace {

template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *pointer) const { Free(pointer); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Certificate = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

void say(char *error, size_t error_size, std::string const &message) {
    if (error == nullptr || error_size == 0) return;
    unsigned long const code = ERR_get_error();
    std::string text = message;
    if (code != 0) {
        char reason[160];
        ERR_error_string_n(code, reason, sizeof reason);
        text += std::string(": ") + reason;
    }
    ERR_clear_error();
    std::snprintf(error, error_size, "%s", text.c_str());
}

Key new_key() { return Key(EVP_EC_gen("P-256")); }

// 20 years: a household's machines should not fall out of their swarm on a date nobody remembers.
constexpr long lifetime = 20L * 365 * 24 * 3600;

bool add_extension(X509 *certificate, X509 *issuer, int nid, char const *value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer, certificate, nullptr, nullptr, 0);
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    if (extension == nullptr) return false;
    bool const added = X509_add_ext(certificate, extension, -1) == 1;
    X509_EXTENSION_free(extension);
    return added;
}

Certificate new_certificate(EVP_PKEY *key, char const *name) {
    Certificate certificate(X509_new());
    if (!certificate) return certificate;
    unsigned char serial[16];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7F;
    BIGNUM *number = BN_bin2bn(serial, sizeof serial, nullptr);
    BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate.get()));
    BN_free(number);
    X509_set_version(certificate.get(), 2);
    X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(certificate.get()), lifetime);
    X509_set_pubkey(certificate.get(), key);
    X509_NAME *subject = X509_get_subject_name(certificate.get());
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, reinterpret_cast<unsigned char const *>(name), -1, -1,
                               0);
    return certificate;
}

bool write_pem(X509 *certificate, EVP_PKEY *key, char *certificate_out, size_t certificate_size, char *key_out,
               size_t key_size) {
    Bio certificate_bio(BIO_new(BIO_s_mem()));
    Bio key_bio(BIO_new(BIO_s_mem()));
    if (PEM_write_bio_X509(certificate_bio.get(), certificate) != 1) return false;
    if (PEM_write_bio_PrivateKey(key_bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) return false;
    char *data = nullptr;
    long length = BIO_get_mem_data(certificate_bio.get(), &data);
    if (length < 0 || static_cast<size_t>(length) >= certificate_size) return false;
    std::memcpy(certificate_out, data, length);
    certificate_out[length] = 0;
    length = BIO_get_mem_data(key_bio.get(), &data);
    if (length < 0 || static_cast<size_t>(length) >= key_size) return false;
    std::memcpy(key_out, data, length);
    key_out[length] = 0;
    return true;
}

Certificate read_certificate(char const *pem) {
    Bio bio(BIO_new_mem_buf(pem, -1));
    return Certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

Key read_key(char const *pem) {
    Bio bio(BIO_new_mem_buf(pem, -1));
    return Key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

extern "C" int bahost_pairing_make_authority(const char *name, char *certificate_out, size_t certificate_size,
                                             char *key_out, size_t key_size, char *error, size_t error_size) {
    Key key = new_key();
    if (!key) return say(error, error_size, "cannot make a key"), -1;
    Certificate certificate = new_certificate(key.get(), name);
    if (!certificate) return say(error, error_size, "cannot make a certificate"), -1;
    X509_set_issuer_name(certificate.get(), X509_get_subject_name(certificate.get()));
    if (!add_extension(certificate.get(), certificate.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_extension(certificate.get(), certificate.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_extension(certificate.get(), certificate.get(), NID_subject_key_identifier, "hash")) {
        return say(error, error_size, "cannot describe the authority"), -1;
    }
    if (X509_sign(certificate.get(), key.get(), EVP_sha256()) == 0) {
        return say(error, error_size, "cannot sign the authority"), -1;
    }
    if (!write_pem(certificate.get(), key.get(), certificate_out, certificate_size, key_out, key_size)) {
        return say(error, error_size, "the room for the PEM text is too small"), -1;
    }
    return 0;
}

extern "C" int bahost_pairing_certify(const char *authority_certificate, const char *authority_key, const char *name,
                                      char *certificate_out, size_t certificate_size, char *key_out, size_t key_size,
                                      char *error, size_t error_size) {
    Certificate authority = read_certificate(authority_certificate);
    Key authority_secret = read_key(authority_key);
    if (!authority || !authority_secret) return say(error, error_size, "the authority is not PEM"), -1;
    if (X509_check_private_key(authority.get(), authority_secret.get()) != 1) {
        return say(error, error_size, "the authority's key is not its certificate's"), -1;
    }
    Key key = new_key();
    if (!key) return say(error, error_size, "cannot make a key"), -1;
    Certificate certificate = new_certificate(key.get(), name);
    if (!certificate) return say(error, error_size, "cannot make a certificate"), -1;
    X509_set_issuer_name(certificate.get(), X509_get_subject_name(authority.get()));
    // libtorrent checks a peer's certificate names the torrent (its info-hash) or "*".
    if (!add_extension(certificate.get(), authority.get(), NID_subject_alt_name, "DNS:*") ||
        !add_extension(certificate.get(), authority.get(), NID_basic_constraints, "critical,CA:FALSE") ||
        !add_extension(certificate.get(), authority.get(), NID_ext_key_usage, "serverAuth,clientAuth")) {
        return say(error, error_size, "cannot describe the machine"), -1;
    }
    if (X509_sign(certificate.get(), authority_secret.get(), EVP_sha256()) == 0) {
        return say(error, error_size, "cannot sign the machine's certificate"), -1;
    }
    if (!write_pem(certificate.get(), key.get(), certificate_out, certificate_size, key_out, key_size)) {
        return say(error, error_size, "the room for the PEM text is too small"), -1;
    }
    return 0;
}

extern "C" int bahost_pairing_check(const char *authority_pem, const char *certificate_pem, const char *key_pem) {
    Certificate authority = read_certificate(authority_pem);
    Certificate certificate = read_certificate(certificate_pem);
    Key key = read_key(key_pem);
    ERR_clear_error();
    if (!authority || !certificate || !key) return -1;
    Key authority_public(X509_get_pubkey(authority.get()));
    if (!authority_public) return -1;
    return X509_verify(certificate.get(), authority_public.get()) == 1 &&
                   X509_check_private_key(certificate.get(), key.get()) == 1
               ? 1
               : 0;
}

extern "C" int bahost_pairing_fingerprint(const char *certificate_pem, uint8_t fingerprint[32]) {
    Certificate certificate = read_certificate(certificate_pem);
    ERR_clear_error();
    unsigned int length = 0;
    if (!certificate || X509_digest(certificate.get(), EVP_sha256(), fingerprint, &length) != 1 || length != 32) {
        return -1;
    }
    return 0;
}
