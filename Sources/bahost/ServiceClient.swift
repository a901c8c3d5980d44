import ArgumentParser
import Foundation
import ServiceWire

/// How the commands reach the service.
struct ServiceOptions: ParsableArguments {
    @Option(help: "The service's socket (default $BAHOST_SOCKET, else $XDG_RUNTIME_DIR/bahost/service.sock).")
    var socket: String?

    @Flag(help: "Print JSON: progress as one object per line, then the result as one object.")
    var json = false

    /// Sends one control command, shows its progress, prints its report; exits 0 when it succeeded, 2 when it
    /// reported a failure, 69 when the service cannot be reached.
    func send(_ command: ControlCommand) throws -> ControlReport {
        let path = socket ?? ServiceProtocol.defaultSocketPath
        let connection: FramedSocket
        do {
            connection = try FramedSocket.connect(to: path)
        } catch {
            Output.standardError("bahost: the service is not reachable at \(path) (\(error)); start it with `bahost daemon`\n")
            throw ExitCode(69)
        }
        defer { connection.close() }
        func exchange(_ id: UInt64, _ request: ServiceRequest) throws -> ServiceReply {
            // A service that refuses the connection has said why before closing it: read that even if sending failed.
            try? connection.send(try ServiceProtocol.encode(ClientMessage.request(id: id, request)))
            while let frame = try? connection.receive() {
                switch try ServiceProtocol.decodeServiceMessage(frame) {
                case .reply(let replyID, let reply) where replyID == id || replyID == 0:
                    return reply
                case .progress(_, let line):
                    if json {
                        Self.output(line.json)
                    } else if let text = line.text {
                        Self.output(text)
                    }
                default:
                    continue
                }
            }
            Output.standardError("bahost: the service closed the connection\n")
            throw ExitCode(69)
        }
        if case .failure(let error) = try exchange(1, .hello(Hello(role: .control, appIdentifier: nil))) {
            Output.standardError("bahost: the service refused the connection: \(error)\n")
            throw ExitCode(69)
        }
        switch try exchange(2, .control(command)) {
        case .report(let report):
            Self.output(json ? report.json : report.text)
            return report
        case .failure(let error):
            Output.standardError("bahost: \(error)\n")
            throw ExitCode(1)
        default:
            Output.standardError("bahost: the service answered something unexpected\n")
            throw ExitCode(1)
        }
    }

    /// A line of the command's output (`Output`).
    static func output(_ line: String) {
        Output.standardOutput(line.hasSuffix("\n") ? line : line + "\n")
    }

    /// Runs a command and exits with its status.
    func run(_ command: ControlCommand) throws {
        let report = try send(command)
        if !report.success { throw ExitCode(2) }
    }
}
