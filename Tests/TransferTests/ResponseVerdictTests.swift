import Foundation
import Testing
@testable import Transfer

/// What a response means for an attempt, rule by rule, without a server.
@Suite struct ResponseVerdictTests {
    let version = Validator(etag: "\"v1\"", lastModified: nil)

    func request(size: Int64 = 100, validator: Validator? = nil) -> TransferRequest {
        TransferRequest(
            url: "https://cdn.example.com/a", expectedSize: size, partialPath: "/nonexistent", validator: validator,
            checkURL: { _ in nil })
    }

    func verdict(_ status: Int, _ headers: [(String, String)] = [], offset: Int64 = 0, request: TransferRequest? = nil)
        -> ResponseVerdict
    {
        ResponseVerdict.of(
            status: status, headers: ResponseHeaders(headers), url: "https://cdn.example.com/a", offset: offset,
            request: request ?? self.request())
    }

    @Test func aRedirectResolvesItsLocationAgainstTheURL() {
        #expect(verdict(302, [("Location", "/b")]) == .redirect("https://cdn.example.com/b"))
        guard case .fail(let error) = verdict(301) else { Issue.record("a redirect without Location was followed"); return }
        #expect(error.code == TransferError.redirectToNonExistentLocation && error.kind == .permanent)
        #expect(error.error.domain == TransferError.urlDomain)
    }

    @Test func theWholeFileIsWrittenFromTheStartWithItsValidator() {
        #expect(
            verdict(200, [("ETag", "\"v1\""), ("Content-Length", "100")], offset: 40)
                == .body(start: 0, validator: version))
    }

    @Test func aContentLengthThatCannotMakeTheDeclaredSizeIsRefusedBeforeTheBody() {
        guard case .fail(let error) = verdict(200, [("Content-Length", "99")]) else {
            Issue.record("a short body was accepted"); return
        }
        #expect(error.code == TransferError.sizeMismatch && error.kind == .permanent)
    }

    @Test func aRangeThatFitsResumesUnderTheValidatorOnDisk() {
        let resumed = verdict(
            206, [("Content-Range", "bytes 40-99/100"), ("ETag", "\"v1\""), ("Content-Length", "60")], offset: 40,
            request: request(validator: version))
        #expect(resumed == .body(start: 40, validator: version))
    }

    @Test func aRangeThatDoesNotFitStartsTheFileAgain() {
        let onDisk = request(validator: version)
        for headers in [
            [("Content-Range", "bytes 0-99/100")],  // not where the file ends
            [("Content-Range", "bytes 40-99/100"), ("ETag", "\"v2\"")],  // another version
            [("Content-Length", "60")],  // no Content-Range at all
        ] {
            guard case .restart = verdict(206, headers, offset: 40, request: onDisk) else {
                Issue.record("\(headers) was resumed"); continue
            }
        }
        guard case .fail(let error) = verdict(206, [("Content-Range", "bytes 40-99/120")], offset: 40, request: onDisk)
        else { Issue.record("a file of another size was resumed"); return }
        #expect(error.code == TransferError.sizeMismatch)
    }

    @Test func preconditionFailuresRestartOnlyAResume() {
        guard case .restart = verdict(416, offset: 40) else { Issue.record("416 to a resume did not restart"); return }
        guard case .fail(let error) = verdict(412) else { Issue.record("412 to a whole request was retried"); return }
        #expect(error.code == 412 && error.kind == .permanent)
    }

    @Test func serverTroubleIsTransientAndKeepsRetryAfter() {
        guard case .fail(let error) = verdict(503, [("Retry-After", "7")]) else { Issue.record("503 accepted"); return }
        #expect(error.kind == .transient && error.code == 503 && error.retryAfter == .seconds(7))
        guard case .fail(let missing) = verdict(404) else { Issue.record("404 accepted"); return }
        #expect(missing.kind == .permanent && missing.code == 404)
    }

    /// A `Retry-After` date is read; one that is not an HTTP date (here, bytes past a date that are not ASCII, which
    /// made Foundation's DateFormatter stop the process) counts as none.
    @Test func aRetryAfterDateIsReadAndAnythingElseIgnored() {
        let date = Date(timeIntervalSinceNow: 120)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard case .fail(let dated) = verdict(503, [("Retry-After", formatter.string(from: date))]) else {
            Issue.record("503 accepted"); return
        }
        let wait = dated.retryAfter ?? .zero
        #expect(wait > .seconds(100) && wait <= .seconds(120), "\(wait)")
        let garbled = "Mon, 23 Nov 2026 00:00:10" + String(decoding: [0xDC, 0xB8, 0xB2, 0xAB], as: UTF8.self)
        guard case .fail(let ignored) = verdict(503, [("Retry-After", garbled)]) else {
            Issue.record("503 accepted")
            return
        }
        #expect(ignored.retryAfter == nil)
    }

    @Test func aBasicChallengeNamesItsProtectionSpace() {
        guard case .fail(let error) = verdict(401, [("WWW-Authenticate", "Basic realm=\"levels\"")]) else {
            Issue.record("401 accepted"); return
        }
        #expect(error.challenge == ServerChallenge(host: "cdn.example.com", port: 443, scheme: "https", realm: "levels"))
    }
}
