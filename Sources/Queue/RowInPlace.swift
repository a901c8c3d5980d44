import GRDB
import GRDBSQLite

/// The current row of a statement that GRDB steps, read column by column in place with SQLite's own calls: text as
/// the bytes SQLite holds (valid until the statement steps again), numbers without a `DatabaseValue` of each. For
/// the few reads of many rows where GRDB's `Row` subscripts, which check each column's type and copy each string,
/// were most of the time (`QueueStore.forEachCurrentDownload`).
struct RowInPlace {
    private let statement: SQLiteStatement

    init(_ statement: SQLiteStatement) { self.statement = statement }

    /// The column's text, or nil for NULL.
    func text(_ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard sqlite3_column_type(statement, column) != SQLITE_NULL else { return nil }
        // The bytes' count is asked after the text, as SQLite's documentation requires.
        let start = sqlite3_column_text(statement, column)
        return UnsafeBufferPointer(start: start, count: Int(sqlite3_column_bytes(statement, column)))
    }

    /// The text of a column that is never NULL (empty should it be).
    func textOrEmpty(_ column: Int32) -> UnsafeBufferPointer<UInt8> {
        text(column) ?? UnsafeBufferPointer(start: nil, count: 0)
    }

    /// The column as an integer (0 for NULL).
    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
}
