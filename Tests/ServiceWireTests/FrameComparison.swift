import Foundation
import ServiceWire

/// A frame read or written compared with the bytes a test expects, as `Data`.
func == (frame: Frame?, data: Data) -> Bool { frame.map { Data($0) } == data }
