import CBAExtension

/// bahost's release and the extension ABI it implements: the one place either is written down. `bahost --version`,
/// the service's hello and `bahost debug status` print these; `scripts/package-deb.sh` reads the release from
/// `bahost --version`, and a test holds CHANGELOG.md's newest entry to it.
public enum BahostVersion {
    /// The release, semantic versioning: the C ABI and the Swift SDK's public API follow its rules.
    public static let release = "0.4.0"
    /// The C ABI's version, from `SDK/C/include/ba/version.h`: major.minor.
    public static let abi = "\(BA_ABI_VERSION_MAJOR).\(BA_ABI_VERSION_MINOR)"
}
