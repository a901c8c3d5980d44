import Glibc

/// Languages as BCP-47 tags (`fr`, `pt-BR`), chosen the way a localized asset pack is: the user's preferred
/// languages in order, each matching a tag exactly (case aside) or, failing that, by its language subtag.
public enum LanguageTags {
    /// The user's preferred languages, as POSIX sets them: `LANGUAGE` (a list, GNU's), then `LC_ALL`, `LC_MESSAGES`,
    /// `LANG`; `C` and `POSIX` say nothing. `fr_CA.UTF-8` becomes `fr-CA`. (Foundation's `Locale.preferredLanguages`
    /// reads none of these on Linux.)
    public static func preferred(_ environment: [String: String] = ProcessEnvironment.variables) -> [String] {
        var tags: [String] = []
        var values = (environment["LANGUAGE"] ?? "").split(separator: ":").map(String.init)
        values += ["LC_ALL", "LC_MESSAGES", "LANG"].compactMap { environment[$0] }
        for value in values {
            let tag = String(value.prefix { $0 != "." && $0 != "@" }.map { $0 == "_" ? "-" : $0 })
            guard !tag.isEmpty, tag != "C", tag != "POSIX", !tags.contains(where: { same($0, tag) }) else { continue }
            tags.append(tag)
        }
        return tags
    }

    /// The best of `available` for someone who prefers `preferred` (in order); nil when none matches.
    public static func best(for preferred: [String], among available: Set<String>) -> String? {
        let sorted = available.sorted()
        for wanted in preferred {
            if let exact = sorted.first(where: { same($0, wanted) }) { return exact }
            if let close = sorted.first(where: { language(of: $0) == language(of: wanted) }) { return close }
        }
        return nil
    }

    /// Whether a pack localized for `tag` serves `wanted`: the same tag, or the same language subtag.
    public static func serves(_ tag: String, _ wanted: String) -> Bool {
        same(tag, wanted) || language(of: tag) == language(of: wanted)
    }

    /// The same tag, case aside.
    public static func same(_ a: String, _ b: String) -> Bool { a.lowercased() == b.lowercased() }

    /// The language subtag, lowercased: `pt` for `pt-BR`.
    static func language(of tag: String) -> String {
        String(tag.prefix { $0 != "-" }).lowercased()
    }
}
