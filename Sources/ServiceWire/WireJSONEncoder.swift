/// The protocol's JSON, written without Foundation: the app library links this module, and Foundation on Linux
/// brings ICU's data (tens of megabytes in every game that ships the library); no Foundation-free JSON coder is among
/// the packages this project builds with. It writes what Foundation's `JSONEncoder` writes with `.sortedKeys` and
/// `.withoutEscapingSlashes` (the protocol's settings until then), byte for byte: keys in the order of their UTF-8
/// bytes, `"`, `\` and control characters escaped (`\b \f \n \r \t`, else `\u00xx`), nothing else; a `nil` in a keyed
/// container left out, in an unkeyed one `null`; a `Double` as its shortest form without a trailing `.0`.
/// `WireJSONTests` holds it to Foundation's output on every kind of message.
public enum WireJSON {
    /// `value` as one JSON text.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let slot = Slot()
        try slot.encode(value, codingPath: [])
        var output: [UInt8] = []
        output.reserveCapacity(256)
        slot.write(to: &output)
        return output
    }
}

/// One value being encoded. Containers hold slots, so that a nested container or a super-encoder filled after it was
/// made still lands where it was asked for.
final class Slot {
    enum Content {
        case unset
        /// A number, `true`, `false`, `null` or a string, already written.
        case scalar([UInt8])
        case array([Slot])
        case object([String: Slot])
    }

    var content = Content.unset

    func encode<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        if let scalar = try Self.scalar(value) {
            content = .scalar(scalar)
        } else {
            try value.encode(to: SlotEncoder(slot: self, codingPath: codingPath))
            // A value that encoded nothing is an empty object, as Foundation writes it.
            if case .unset = content { content = .object([:]) }
        }
    }

    /// The members of the object this slot holds (made one when unset).
    func objectMembers() -> [String: Slot] {
        if case .object(let members) = content { return members }
        content = .object([:])
        return [:]
    }

    func setMember(_ key: String, _ slot: Slot) {
        var members = objectMembers()
        content = .unset  // one reference to the dictionary while it changes
        members[key] = slot
        content = .object(members)
    }

    func append(_ slot: Slot) {
        var items: [Slot] = []
        if case .array(let existing) = content { items = existing }
        content = .unset
        items.append(slot)
        content = .array(items)
    }

    func write(to output: inout [UInt8]) {
        switch content {
        case .unset: output += Array("{}".utf8)
        case .scalar(let bytes): output += bytes
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                item.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted(by: Self.byteOrder).enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                members[key]!.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func byteOrder(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    /// The value written, when it is one of JSON's scalars.
    static func scalar<T: Encodable>(_ value: T) throws -> [UInt8]? {
        switch value {
        case let value as String:
            var output: [UInt8] = []
            writeString(value, to: &output)
            return output
        case let value as Bool: return Array((value ? "true" : "false").utf8)
        case let value as Int: return Array(String(value).utf8)
        case let value as Int64: return Array(String(value).utf8)
        case let value as UInt64: return Array(String(value).utf8)
        case let value as Int32: return Array(String(value).utf8)
        case let value as UInt32: return Array(String(value).utf8)
        case let value as Int16: return Array(String(value).utf8)
        case let value as UInt16: return Array(String(value).utf8)
        case let value as Int8: return Array(String(value).utf8)
        case let value as UInt8: return Array(String(value).utf8)
        case let value as UInt: return Array(String(value).utf8)
        case let value as Double: return try number(value.description, finite: value.isFinite, value)
        case let value as Float: return try number(value.description, finite: value.isFinite, value)
        default: return nil
        }
    }

    private static func number(_ text: String, finite: Bool, _ value: Any) throws -> [UInt8] {
        guard finite else {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "JSON has no \(text)"))
        }
        return Array((text.hasSuffix(".0") ? String(text.dropLast(2)) : text).utf8)
    }

    static func writeString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: output += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: output += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                output += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

/// The `Encoder` a value encodes itself to: every container writes into the one slot.
private struct SlotEncoder: Encoder {
    let slot: Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        _ = slot.objectMembers()
        return KeyedEncodingContainer(KeyedSlotContainer<Key>(slot: slot, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = slot.content {} else { slot.content = .array([]) }
        return UnkeyedSlotContainer(slot: slot, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleSlotContainer(slot: slot, codingPath: codingPath) }
}

private struct KeyedSlotContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let slot: Slot
    let codingPath: [any CodingKey]

    private func member(_ key: Key) -> Slot {
        let member = Slot()
        slot.setMember(key.stringValue, member)
        return member
    }

    mutating func encodeNil(forKey key: Key) throws { member(key).content = .scalar(Array("null".utf8)) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try member(key).encode(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        SlotEncoder(slot: member(key), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        SlotEncoder(slot: member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        SlotEncoder(slot: member(Key(stringValue: "super")!), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder { SlotEncoder(slot: member(key), codingPath: codingPath) }
}

private struct UnkeyedSlotContainer: UnkeyedEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]
    var count: Int {
        if case .array(let items) = slot.content { return items.count }
        return 0
    }

    private func next() -> Slot {
        let item = Slot()
        slot.append(item)
        return item
    }

    mutating func encodeNil() throws { next().content = .scalar(Array("null".utf8)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try next().encode(value, codingPath: codingPath + [IndexKey(count)])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        SlotEncoder(slot: next(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        SlotEncoder(slot: next(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { SlotEncoder(slot: next(), codingPath: codingPath) }
}

private struct SingleSlotContainer: SingleValueEncodingContainer {
    let slot: Slot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.content = .scalar(Array("null".utf8)) }

    mutating func encode<T: Encodable>(_ value: T) throws { try slot.encode(value, codingPath: codingPath) }
}

/// An array's index as a coding key, for the coding path of what an error names.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
