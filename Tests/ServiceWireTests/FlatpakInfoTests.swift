import ServiceWire
import Testing

/// `.flatpak-info` as Flatpak writes it, and what is refused in it.
@Suite struct FlatpakInfoTests {
    func parse(_ text: String) -> FlatpakInfo? { FlatpakInfo(parsing: Array(text.utf8)) }

    @Test func flatpaksOwnFile() {
        let info = parse("""
            [Application]
            name=com.example.levels
            runtime=runtime/org.bahost.TestPlatform/x86_64/1

            [Instance]
            instance-id=389408077
            app-path=/home/u/.local/share/flatpak/app/com.example.levels/x86_64/stable/e572/files
            # a comment
            """)
        #expect(info == FlatpakInfo(appIdentifier: "com.example.levels", instance: "389408077"))
    }

    @Test func theKeysCountOnlyInTheirGroups() {
        #expect(parse("[Instance]\nname=com.example.levels\n") == nil)
        #expect(parse("[Application]\nname = com.example.levels\n[Other]\ninstance-id=1\n")
            == FlatpakInfo(appIdentifier: "com.example.levels", instance: nil))
        // The first name wins: a second cannot replace it.
        #expect(parse("[Application]\nname=com.example.a\nname=com.example.b\n")?.appIdentifier == "com.example.a")
    }

    @Test func whatIsNotAnApplicationIDIsRefused() {
        #expect(parse("[Application]\nname=levels\n") == nil)
        #expect(parse("[Application]\nname=com.example.../x\n") == nil)
        #expect(parse("[Application]\nname=com.example.1levels\n") == nil)
        #expect(parse("[Application]\nname=com.example.le vels\n") == nil)
        #expect(parse("[Application]\nname=com.example.levels\n[Instance]\ninstance-id=../1\n")?.instance == nil)
        #expect(FlatpakInfo.isApplicationID("org.example.Game_2-x"))
        #expect(!FlatpakInfo.isApplicationID(String(repeating: "a.", count: 130) + "a"))
    }

    @Test func aFileOverItsBoundIsRefused() {
        let padding = String(repeating: "#", count: FlatpakInfo.maximumSize)
        #expect(parse("[Application]\nname=com.example.levels\n\(padding)") == nil)
    }
}
