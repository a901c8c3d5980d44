/// The protocol's JSON, read without Foundation (why: `WireJSON`). A frame is another party's bytes: the reader
/// accepts strict JSON only (RFC 8259: no comments, no trailing commas, no control characters or invalid UTF-8 in a
/// string), nested at most `maximumDepth` deep, and says where it stopped.
extension WireJSON {
    /// Deeper nesting is refused, as Foundation's reader refuses it: each level is a frame of the reader's stack.
    public static let maximumDepth = 512

    /// The value of type `T` that `bytes`, one JSON text, holds.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws -> JSONNode {
            var parser = JSONParser(buffer)
            return try parser.parseDocument()
        }
        let node = try bytes.withContiguousStorageIfAvailable(parse) ?? Array(bytes).withUnsafeBufferPointer(parse)
        return try T(from: NodeDecoder(node: node, codingPath: []))
    }
}

/// A parsed JSON value.
enum JSONNode {
    case null
    case bool(Bool)
    /// A number as it was written (checked against JSON's grammar), converted when a type asks for it.
    case number(String)
    case string(String)
    case array([JSONNode])
    case object([String: JSONNode])

    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var at = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws -> JSONNode {
        let value = try parseValue(depth: 0)
        skipSpace()
        guard at == bytes.count else { throw failure("text after the value") }
        return value
    }

    private func failure(_ what: String) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: [], debugDescription: "not JSON: \(what) at byte \(at)"))
    }

    private mutating func skipSpace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 {
            at += 1
        }
    }

    private mutating func parseValue(depth: Int) throws -> JSONNode {
        skipSpace()
        guard at < bytes.count else { throw failure("the end, where a value was due") }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        default: return .number(try parseNumber())
        }
    }

    private mutating func expect(_ word: String) throws {
        for byte in word.utf8 {
            guard at < bytes.count, bytes[at] == byte else { throw failure("not \(word)") }
            at += 1
        }
    }

    private mutating func parseObject(depth: Int) throws -> JSONNode {
        var members: [String: JSONNode] = [:]
        try parseContainer(depth: depth, closing: UInt8(ascii: "}"), what: "an object") { parser in
            parser.skipSpace()
            guard parser.at < parser.bytes.count, parser.bytes[parser.at] == UInt8(ascii: "\"") else {
                throw parser.failure("no key")
            }
            let key = try parser.parseString()
            parser.skipSpace()
            guard parser.at < parser.bytes.count, parser.bytes[parser.at] == UInt8(ascii: ":") else {
                throw parser.failure("no ':' after a key")
            }
            parser.at += 1
            members[key] = try parser.parseValue(depth: depth)
        }
        return .object(members)
    }

    private mutating func parseArray(depth: Int) throws -> JSONNode {
        var items: [JSONNode] = []
        try parseContainer(depth: depth, closing: UInt8(ascii: "]"), what: "an array") { parser in
            items.append(try parser.parseValue(depth: depth))
        }
        return .array(items)
    }

    /// An object's members or an array's items, each read by `element`, from the opening byte to the closing one.
    private mutating func parseContainer(
        depth: Int, closing: UInt8, what: String, _ element: (inout JSONParser) throws -> Void
    ) throws {
        guard depth <= WireJSON.maximumDepth else { throw failure("nesting deeper than \(WireJSON.maximumDepth)") }
        at += 1
        skipSpace()
        if at < bytes.count, bytes[at] == closing {
            at += 1
            return
        }
        while true {
            try element(&self)
            skipSpace()
            guard at < bytes.count else { throw failure("\(what) without its end") }
            if bytes[at] == UInt8(ascii: ",") {
                at += 1
                continue
            }
            guard bytes[at] == closing else {
                throw failure("neither ',' nor '\(Character(Unicode.Scalar(closing)))' in \(what)")
            }
            at += 1
            return
        }
    }

    private mutating func parseString() throws -> String {
        at += 1
        var text: [UInt8] = []
        while true {
            guard at < bytes.count else { throw failure("a string without its end") }
            let byte = bytes[at]
            at += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: text, as: UTF8.self) else { throw failure("a string not UTF-8") }
                return string
            case UInt8(ascii: "\\"):
                guard at < bytes.count else { throw failure("an escape without its end") }
                let escaped = bytes[at]
                at += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"): text += Array(String(try parseEscapedScalar()).utf8)
                default: throw failure("an unknown escape")
                }
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                text.append(byte)
            }
        }
    }

    /// The character of a `\u` escape (its `\u` read), a surrogate pair's second half included.
    private mutating func parseEscapedScalar() throws -> Unicode.Scalar {
        let first = try parseHex4()
        if (0xD800..<0xDC00).contains(first) {
            guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
                throw failure("half a surrogate pair")
            }
            at += 2
            let second = try parseHex4()
            guard (0xDC00..<0xE000).contains(second) else { throw failure("half a surrogate pair") }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))!
        }
        guard let scalar = Unicode.Scalar(first) else { throw failure("half a surrogate pair") }
        return scalar
    }

    private mutating func parseHex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard at < bytes.count, let digit = Self.hexValue(bytes[at]) else { throw failure("a bad \\u escape") }
            value = value << 4 | UInt32(digit)
            at += 1
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// JSON's number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private mutating func parseNumber() throws -> String {
        let start = at
        func digits() -> Int {
            let from = at
            while at < bytes.count, bytes[at] >= UInt8(ascii: "0"), bytes[at] <= UInt8(ascii: "9") { at += 1 }
            return at - from
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        let leadingZero = at < bytes.count && bytes[at] == UInt8(ascii: "0")
        let whole = digits()
        guard whole > 0, !(leadingZero && whole > 1) else { throw failure("not a value") }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() > 0 else { throw failure("a number without digits after its point") }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { throw failure("a number without digits in its exponent") }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
    }
}

/// A `Decoder` over one parsed value.
private struct NodeDecoder: Decoder {
    let node: JSONNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw mismatch([String: Any].self, node, codingPath) }
        return KeyedDecodingContainer(KeyedNodeContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = node else { throw mismatch([Any].self, node, codingPath) }
        return UnkeyedNodeContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
}

extension NodeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool {
        if case .null = node { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNode(type, node, codingPath) }
}

private func mismatch(_ type: Any.Type, _ node: JSONNode, _ path: [any CodingKey]) -> DecodingError {
    if case .null = node {
        return .valueNotFound(type, DecodingError.Context(codingPath: path, debugDescription: "null where \(type) was due"))
    }
    return .typeMismatch(type, DecodingError.Context(codingPath: path, debugDescription: "\(node.kind) where \(type) was due"))
}

/// `node` as a `T`: JSON's scalars directly, anything else through its own `init(from:)`.
private func decodeNode<T: Decodable>(_ type: T.Type, _ node: JSONNode, _ path: [any CodingKey]) throws -> T {
    func number<N>(_ make: (String) -> N?) throws -> N {
        guard case .number(let text) = node else { throw mismatch(T.self, node, path) }
        if let value = make(text) { return value }
        // An integer written as a whole decimal (`3.0`, `3e0`) is still that integer, as Foundation reads it.
        if let double = Double(text), let whole = Int64(exactly: double), let value = make(String(whole)) { return value }
        throw DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: path, debugDescription: "\(text) does not fit \(T.self)"))
    }
    switch type {
    case is String.Type:
        guard case .string(let text) = node else { throw mismatch(T.self, node, path) }
        return text as! T
    case is Bool.Type:
        guard case .bool(let value) = node else { throw mismatch(T.self, node, path) }
        return value as! T
    case let numeric as any (Numeric & LosslessStringConvertible).Type:
        return try number { numeric.init($0) } as! T
    default: return try T(from: NodeDecoder(node: node, codingPath: path))
    }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONNode]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> JSONNode {
        guard let node = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, DecodingError.Context(codingPath: codingPath, debugDescription: "no \"\(key.stringValue)\""))
        }
        return node
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try member(key) { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeNode(type, try member(key), codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try NodeDecoder(node: try member(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try NodeDecoder(node: try member(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        NodeDecoder(node: members["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeContainer: UnkeyedDecodingContainer {
    let items: [JSONNode]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [JSONNode], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next(_ type: Any.Type) throws -> (JSONNode, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(codingPath: codingPath, debugDescription: "the array has no more values"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if case .null = items[currentIndex] {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (node, path) = try next(type)
        return try decodeNode(type, node, path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (node, path) = try next([String: Any].self)
        return try NodeDecoder(node: node, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (node, path) = try next([Any].self)
        return try NodeDecoder(node: node, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (node, path) = try next(Any.self)
        return NodeDecoder(node: node, codingPath: path)
    }
}
