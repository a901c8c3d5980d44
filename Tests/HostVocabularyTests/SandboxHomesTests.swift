import HostVocabulary
import Testing

/// A sandboxed app's container lives in its sandbox's folder; every other group's in the data root.
@Suite struct SandboxHomesTests {
    @Test func aSandboxedAppsGroupLivesInItsHome() {
        let root = DataRoot("/home/u/.local/share/bahost")
        let copy = root
        let home = "/home/u/.var/app/com.example.levels"
        root.sandboxHomes.place("com.example.levels", group: "group.com.example.levels", home: home)
        // Every copy of the data root sees the placement: the engine's parts share one table.
        #expect(copy.container(for: "group.com.example.levels").path
            == "/home/u/.var/app/com.example.levels/data/bahost/containers/group.com.example.levels")
        #expect(copy.deliveriesPath(for: "group.com.example.levels")
            == "\(home)/data/bahost/containers/group.com.example.levels/Library/Caches/BackgroundAssets")
        #expect(root.container(for: "group.com.example.other").path
            == "/home/u/.local/share/bahost/containers/group.com.example.other")
        #expect(root.sandboxHomes.home(ofApp: "com.example.levels") == "/home/u/.var/app/com.example.levels")
        // Uninstalled (or installed again natively): back in the data root.
        root.sandboxHomes.place("com.example.levels", group: "group.com.example.levels", home: nil)
        #expect(root.container(for: "group.com.example.levels").path
            == "/home/u/.local/share/bahost/containers/group.com.example.levels")
        #expect(root.sandboxHomes.home(ofApp: "com.example.levels") == nil)
    }
}
