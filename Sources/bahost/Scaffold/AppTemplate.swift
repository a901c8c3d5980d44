/// The files every new extension project has whatever its language: the app's Info.plist (every key bahost reads),
/// its manifest (or, for a managed app, an asset pack to package), a README saying how to build, test and run it,
/// and a .gitignore.
struct AppTemplate {
    let scaffold: ExtensionScaffold

    private var name: String { scaffold.name }

    var infoPlist: String {
        let manifestURL = scaffold.managed
            ? "https://localhost:8443/download-manifest.json" : "https://assets.example.com/\(scaffold.manifestFile)"
        let allowed = scaffold.managed ? "localhost" : "assets.example.com"
        return #"""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <!-- The app's Background Assets keys, as on Apple. bahost install reads this from the app's folder. -->
            <plist version="1.0">
            <dict>
                <!-- The app's identity: a reverse-DNS name. -->
                <key>CFBundleIdentifier</key>
                <string>\#(scaffold.appIdentifier)</string>
                <!-- The app's version: when a package declares the app, a new one is an update. -->
                <key>CFBundleVersion</key>
                <string>1.0</string>
                <!-- The app group whose container receives finished files (and, for a managed app, its packs). -->
                <key>BAAppGroupID</key>
                <string>\#(scaffold.appGroup)</string>
                <!-- \#(scaffold.managed
                    ? "The download manifest (bahost pack download-manifest create, or bahost serve's)."
                    : "The manifest the host fetches before each content request and hands the extension.") -->
                <key>BAManifestURL</key>
                <string>\#(manifestURL)</string>
                <!-- Apply until the app's first launch. -->
                <key>BAInitialDownloadRestrictions</key>
                <dict>
                    <!-- On-the-wire bytes of non-essential downloads, the manifest included. -->
                    <key>BADownloadAllowance</key>
                    <integer>104857600</integer>
                    <!-- On-the-wire bytes of essential downloads. -->
                    <key>BAEssentialDownloadAllowance</key>
                    <integer>52428800</integer>
                    <!-- The only hosts downloads may reach; a leading *. matches any subdomain. -->
                    <key>BADownloadDomainAllowList</key>
                    <array>
                        <string>\#(allowed)</string>
                    </array>
                </dict>
                <!-- Uncompressed bytes of non-essential assets. -->
                <key>BAMaxInstallSize</key>
                <integer>104857600</integer>
                <!-- Uncompressed bytes of essential assets. -->
                <key>BAEssentialMaxInstallSize</key>
                <integer>52428800</integer>
                <!-- The host downloads and updates the app's asset packs (ManagedDownloaderExtension). -->
                <key>BAHasManagedAssetPacks</key>
                <\#(scaffold.managed)/>
                <!-- Apple's servers host the packs: not on Linux; host them yourself (bahost serve). -->
                <key>BAUsesAppleHosting</key>
                <false/>
                <!-- bahost's own key: the extension, relative to the app's folder (bahost install). -->
                <key>BAHostExtension</key>
                <string>lib\#(name).so</string>
            </dict>
            </plist>

            """#
    }

    /// The content manifest the extension reads: JSON for Swift, one asset a line for C (no JSON parser needed).
    var manifest: String {
        switch scaffold.language {
        case .swift:
            return #"""
                {"assets": [
                  {"id": "level-1", "url": "https://assets.example.com/levels/level-1.pack", "size": 1048576,
                   "essential": true}
                ]}

                """#
        case .c:
            return """
                # IDENTIFIER SIZE essential|optional URL [SHA256]
                level-1 1048576 essential https://assets.example.com/levels/level-1.pack

                """
        }
    }

    /// One asset pack to package with `bahost pack package`.
    var packManifest: String {
        #"""
        {
          "assetPackID": "intro",
          "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation", "subsequentUpdate"] } },
          "fileSelectors": [{ "directory": "intro" }],
          "platforms": [],
          "userInfo": {}
        }

        """#
    }

    /// The app's menu entry (freedesktop.org): it runs the app through `bahost launch`, which waits for the
    /// essential downloads and lets the app's `BADownloadManager` in as this app. Packaged with the app, in
    /// `/usr/share/applications` (docs/PACKAGING.md).
    var desktopEntry: String {
        """
        [Desktop Entry]
        Type=Application
        Name=\(name)
        # bahost launch waits for the essential downloads, then runs the app as \(scaffold.appIdentifier).
        Exec=bahost launch \(scaffold.appIdentifier) -- \(name.lowercased())
        Categories=Game;

        """
    }

    var gitignore: String {
        scaffold.language == .swift ? ".build/\nPackage.resolved\n/app/\n" : "*.so\n/app/\n"
    }

    var readme: String {
        let build: String
        let test: String
        switch scaffold.language {
        case .swift:
            build = "swift build"
            test = "swift test   # BackgroundAssetsTesting: the extension answers within its budget"
        case .c:
            build = "make        # cc against the installed SDK: pkg-config --cflags bahost"
            test = "make test   # bahost check: the extension answers within its budget"
        }
        let try_ =
            scaffold.managed
            ? """
            bahost pack package AssetPacks/Intro/Manifest.json -o intro.tar.zst
            bahost serve --host localhost --cert server.pem --key server.key intro.tar.zst
            mkdir -p app && cp Info.plist \(scaffold.library) app/ && bahost install app
            """
            : """
            bahost run --plugin \(scaffold.library) --event install --info-plist Info.plist \\
                --manifest \(scaffold.manifestFile) --window-only
            """
        return """
            # \(name)

            A Background Assets \(scaffold.managed ? "managed " : "")extension for bahost, made by \
            `bahost new extension`. The app is `\(scaffold.appIdentifier)`; its files land in the app group \
            `\(scaffold.appGroup)`.

            ```sh
            \(build)
            \(test)
            \(try_)
            ```

            - `Info.plist` has every key bahost reads, each with a comment; set the manifest URL and the allow list.
            - To ship it, the app's package declares it: `Info.plist` and `\(scaffold.library)` in
              `/usr/share/bahost/apps/\(scaffold.appIdentifier)/` (or `~/.local/share/bahost/apps/…` for a user
              install), and `\(scaffold.appIdentifier).desktop` in `/usr/share/applications/`. The service then
              installs it, updates it at each new `CFBundleVersion`, and uninstalls it when the package goes.
            \(scaffold.managed
                ? "- `AssetPacks/Intro` is an asset pack: its `Manifest.json` selects the files that go in it."
                : "- `\(scaffold.manifestFile)` is the manifest format the extension reads; serve yours at `BAManifestURL`.")

            """
    }
}
