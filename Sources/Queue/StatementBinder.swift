import GRDB

/// Receives a row's values in column order, each in its own type (`QueuedDownload.giveValues(to:)`).
protocol RowValueSink {
    mutating func add<Value: DatabaseValueConvertible>(_ value: Value?)
}

/// The values boxed into an array, as GRDB's `StatementArguments` and `PersistenceContainer` take them.
struct BoxedRowValues: RowValueSink {
    var values: [(any DatabaseValueConvertible)?] = []

    mutating func add<Value: DatabaseValueConvertible>(_ value: Value?) { values.append(value) }
}

/// Binds a row's values to a prepared statement as they come, then runs it.
///
/// Why not `StatementArguments`: it boxes each value in an existential and copies the list twice before binding,
/// which was most of a large content request's admission (docs/performance/DECISIONS.md #32).
/// Each value is bound here by its own type's `bind(to:at:)`, GRDB's public binding, the one `StatementArguments`
/// ends in, so the row stored is the same; the statement then runs through GRDB (`execute()`), which keeps the
/// bindings made on its handle once `setUncheckedArguments` has told it the arguments are set.
///
/// Thread rule: the statement's database connection, inside its access (`write`).
struct StatementBinder: RowValueSink {
    private let statement: Statement
    private let count: CInt
    private var index: CInt = 1

    /// Starts binding the `count` parameters of `statement`, all cleared.
    init(_ statement: Statement, count: Int) {
        statement.setUncheckedArguments(StatementArguments())
        self.statement = statement
        self.count = CInt(count)
    }

    mutating func add<Value: DatabaseValueConvertible>(_ value: Value?) {
        precondition(index <= count, "more values than the statement's \(count) parameters")
        let code =
            value.map { $0.bind(to: statement.sqliteStatement, at: index) }
            ?? DatabaseValue.null.bind(to: statement.sqliteStatement, at: index)
        // As GRDB's own binding: SQLite fails a bind only when misused (a parameter it does not have).
        precondition(code == 0, "SQLite refused parameter \(index) (code \(code))")
        index += 1
    }

    /// Runs the statement with what was bound, which must be every parameter.
    func execute() throws {
        precondition(index == count + 1, "\(index - 1) values bound for \(count) parameters")
        try statement.execute()
    }
}
