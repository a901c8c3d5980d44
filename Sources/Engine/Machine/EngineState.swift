import Policy
import Queue
import Transfer

/// The engine's state as one value: the transfer slots and their reserve (`TransferSlots`), what each download the
/// slots may start needs, the outcomes waiting for the next turn to record them, and the challenges being asked
/// about. Events come in (`handle`) and actions go out; no I/O, no clock, no lock, no thread. `EngineDriver` holds it
/// under its lock, feeds it every event and performs the actions outside the lock; the tests drive it directly.
///
/// The rules it keeps, each by construction:
/// - a download starts only through an action of this value, and once (`TransferSlots.add`);
/// - a turn's starts and its reserve are put in place in the same event (`turnWritten`): a transfer that ends the
///   moment it started finds its successor in this turn's reserve;
/// - every queue write is an action: the turn's (`writeTurn`, which takes the outcomes waiting and the downloads
///   started from the reserve), progress (`save`, only while the download still runs and was not cancelled), an
///   allowance's charge (`charge`);
/// - an outcome is told, and its completion delivered, only once the turn that recorded it committed
///   (`turnWritten`); an outcome whose row was cancelled meanwhile has its files deleted instead.
struct EngineState: Sendable {
    /// A download the slots may start, with what its transfer needs.
    struct Chosen: Sendable {
        var download: QueuedDownload
        var app: AppRecord
        /// `app.policy`, made once a turn for all of the app's transfers.
        var policy: AppPolicy

        init(_ download: QueuedDownload, app: AppRecord, policy: AppPolicy) {
            self.download = download
            self.app = app
            self.policy = policy
        }
    }

    enum Event: Sendable {
        /// A turn is about to write: it takes the outcomes waiting and the downloads started from the reserve.
        case turnBegins
        /// The turn's transaction committed: `recorded` (what `turnBegins` gave it; `gone`, those whose row was
        /// cancelled meanwhile), `started` marked moving, `reserve` chosen beyond the free slots (replacing the
        /// last turn's).
        case turnWritten(recorded: [TransferOutcome], gone: Set<String>, started: [Chosen], reserve: [Chosen])
        /// The turn's transaction failed: the outcomes it took stay unrecorded (their rows stay marked moving, and
        /// are queued again once nothing runs).
        case turnFailed(recorded: [TransferOutcome], error: String)
        /// A transfer's body ended: its slot may go to the next reserved download that fits `limits`.
        case bodyEnded(String, limits: SlotLimits)
        /// A transfer's task ended, with how its attempt ended (nil: nothing is left to record).
        case transferEnded(String, TransferJob.Ending?)
        /// A challenge was answered: `outcome` is the row queued again with the credentials given, or the 401 as
        /// final.
        case challengeAnswered(String, TransferOutcome)
        /// A download was cancelled (its row is gone): reserved, it is dropped; running, its task is stopped.
        case cancelled(String)
        /// A running transfer's progress is due to be made durable (`ProgressRecorder` says when).
        case progressed(QueuedDownload)
        /// The reserve no longer holds: the conditions it was chosen under changed, or the engine stops.
        case reserveDropped
    }

    enum Action: Sendable {
        /// Start the transfer of a download now recorded running.
        case start(Chosen)
        /// Cancel a running download's task.
        case cancelTask(String)
        /// Post to the engine's events.
        case wake(EngineEvents.Kinds)
        /// Write the turn: record these outcomes, mark these started from the reserve moving, read the queue and
        /// mark what it chooses moving, in one transaction; then say how it went (`turnWritten`, `turnFailed`).
        case writeTurn(outcomes: [TransferOutcome], startedEarly: [QueuedDownload])
        /// Ask the app's delegate, else its extension, about a challenge; then say what came (`challengeAnswered`).
        case ask(ServerChallenge, row: QueuedDownload, otherwise: TransferOutcome)
        /// Save a running download's row (its progress, its validator).
        case save(QueuedDownload)
        /// Charge an app's allowance what a download received beyond its declared size.
        case charge(appIdentifier: String, bytes: Int64, essential: Bool)
        /// Delete what a transfer of a cancelled download left.
        case discardFiles(partialPath: String, finishedPath: String)
        /// Tell the observer.
        case tell(LifecycleEvent)
        /// A completion of the app's was recorded: deliver it.
        case deliver(appIdentifier: String)
        /// These apps' downloads ended: open the launch gate of those whose essential downloads are all done.
        case announceLaunchIfReady(Set<String>)
    }

    private(set) var slots = TransferSlots()
    /// What each download the last turn chose needs, by unique identifier: its reserve's, until they start or the
    /// next turn replaces them.
    private var chosen: [String: Chosen] = [:]
    /// Outcomes of transfers that ended, oldest first, waiting for the next turn to record them.
    private(set) var outcomes: [TransferOutcome] = []
    /// Downloads whose challenge is being asked about.
    private(set) var challenges: Set<String> = []

    /// Whether nothing runs: no transfer, no challenge being asked about.
    var isIdle: Bool { slots.entries.isEmpty && challenges.isEmpty }

    /// Takes an event and returns what to do, in order.
    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .turnBegins:
            // Those started early first: an outcome taken here implies its start was taken here or before.
            let startedEarly = slots.takeStartedEarly()
            defer { outcomes = [] }
            return [.writeTurn(outcomes: outcomes, startedEarly: startedEarly)]

        case .turnWritten(let recorded, let gone, let started, let reserve):
            var actions = Self.told(recorded, gone: gone)
            chosen = Dictionary(
                (started + reserve).map { ($0.download.uniqueIdentifier, $0) }, uniquingKeysWith: { $1 })
            let chose = TransferSlots.Event.turnChose(
                started: started.map(\.download), reserve: reserve.map(\.download))
            actions += slots.handle(chose).compactMap { resolve($0) }
            return actions

        case .turnFailed(let recorded, let error):
            guard !recorded.isEmpty else { return [] }
            let failed = LifecycleEvent.queueFailed("recording \(recorded.count) transfers' outcomes: \(error)")
            return [.tell(failed), .wake(.transferEnded)]

        case .bodyEnded(let uniqueIdentifier, let limits):
            return slots.handle(.bodyEnded(uniqueIdentifier, limits: limits)).compactMap { resolve($0) }

        case .transferEnded(let uniqueIdentifier, let ending):
            _ = slots.handle(.taskEnded(uniqueIdentifier))
            switch ending {
            case .outcome(let outcome)?:
                outcomes.append(outcome)
                let row = outcome.row
                let charge = outcome.charge.map {
                    Action.charge(appIdentifier: row.appIdentifier, bytes: $0, essential: row.isEssential)
                }
                return (charge.map { [$0] } ?? []) + [.wake(.queueChanged)]
            case .challenged(let challenge, let row, let otherwise)?:
                // Handed over before the transfer counts as ended, so that the engine never sees neither at work.
                challenges.insert(uniqueIdentifier)
                return [.ask(challenge, row: row, otherwise: otherwise), .wake(.queueChanged)]
            case nil:
                return [.wake([.queueChanged, .transferEnded])]
            }

        case .challengeAnswered(let uniqueIdentifier, let outcome):
            guard challenges.remove(uniqueIdentifier) != nil else { return [] }
            outcomes.append(outcome)
            return [.wake(.queueChanged)]

        case .cancelled(let uniqueIdentifier):
            chosen[uniqueIdentifier] = nil
            return slots.handle(.cancelled(uniqueIdentifier)).compactMap { resolve($0) }

        case .progressed(let row):
            // A cancelled download's row is gone: nothing of it is written again.
            guard let entry = slots.entries[row.uniqueIdentifier], !entry.cancelled else { return [] }
            return [.save(row)]

        case .reserveDropped:
            slots.dropReserve()
            return []
        }
    }

    /// The slots' actions, made concrete: a start with what its transfer needs, a wake with its kinds.
    private mutating func resolve(_ action: TransferSlots.Action) -> Action? {
        switch action {
        case .start(let download):
            // Every download a turn chose comes with what it needs (`turnWritten`).
            guard var start = chosen.removeValue(forKey: download.uniqueIdentifier) else { return nil }
            start.download = download
            return .start(start)
        case .cancelTask(let uniqueIdentifier):
            return .cancelTask(uniqueIdentifier)
        case .wake(let reserveLow):
            return .wake(reserveLow ? [.queueChanged, .reserveLow] : .queueChanged)
        }
    }

    /// What follows a turn's record of `outcomes`: the files of those whose row was gone deleted, the others told,
    /// their completions delivered, their apps' launch gates looked at.
    private static func told(_ outcomes: [TransferOutcome], gone: Set<String>) -> [Action] {
        guard !outcomes.isEmpty else { return [] }
        var actions: [Action] = []
        var apps = Set<String>()
        for outcome in outcomes {
            let row = outcome.row
            if gone.contains(row.uniqueIdentifier) {
                actions.append(.discardFiles(partialPath: outcome.partialPath, finishedPath: outcome.finishedPath))
                continue
            }
            if let event = outcome.event { actions.append(.tell(event)) }
            if outcome.completes { actions.append(.deliver(appIdentifier: row.appIdentifier)) }
            apps.insert(row.appIdentifier)
        }
        if !apps.isEmpty { actions.append(.announceLaunchIfReady(apps)) }
        return actions + [.wake(.transferEnded)]
    }
}
