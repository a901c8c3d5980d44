#!/usr/bin/env bash
# Code written against bahost must also compile against Apple's SDK. AppleDeclarationsTests (a test target) shows that
# code written for Apple compiles here; this shows the reverse where bahost could be laxer than Apple: a member that
# Apple isolates to its actor must be refused without `await` here too (Swift 6 mode, against the built module, as
# an app's module sees it). Each case is type-checked, and must fail with the error named, or pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(swift build --show-bin-path)
[ -f "$bin/Modules/BackgroundAssets.swiftmodule" ] || { echo "build first (swift build)" >&2; exit 1; }
csystem=.build/checkouts/swift-system/Sources/CSystem/include
work=$(mktemp -d /tmp/bahost-apple-api.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

typecheck() {
    swiftc -typecheck -swift-version 6 -I "$bin/Modules" -I SDK/C/include -I "$csystem" "$1" > "$work/out" 2>&1
}

cat > "$work/with-await.swift" <<'SWIFT'
import BackgroundAssets
func updates() async -> AssetPackManager.StatusUpdates { await AssetPackManager.shared.statusUpdates }
SWIFT
typecheck "$work/with-await.swift" || { cat "$work/out" >&2; fail "Apple's form (with await) does not compile"; }

cat > "$work/without-await.swift" <<'SWIFT'
import BackgroundAssets
func updates() -> AssetPackManager.StatusUpdates { AssetPackManager.shared.statusUpdates }
SWIFT
! typecheck "$work/without-await.swift" || fail "statusUpdates was read without await: Apple's is actor-isolated"
grep -q "actor-isolated property 'statusUpdates' can not be referenced from a nonisolated context" "$work/out" || {
    cat "$work/out" >&2; fail "statusUpdates without await failed for another reason"; }
# An extension's methods are not isolated to the main actor, on Apple as here: Apple's BADownloaderExtension and
# ManagedDownloaderExtension are Swift protocols whose methods are nonisolated, so a `@MainActor` extension type does
# not conform there, and bahost's runner calls an extension on a thread of its own, where no main actor runs. (The
# app's delegate differs: Apple imports it from Objective-C, and AppleDeclarationsTests holds a `@MainActor` one.)
for protocol in BADownloaderExtension ManagedDownloaderExtension; do
    cat > "$work/main-actor-$protocol.swift" <<SWIFT
import BackgroundAssets
import Foundation
@MainActor struct LevelsExtension: $protocol {
    func downloads(for request: BAContentRequest, manifestURL: URL, extensionInfo: BAAppExtensionInfo)
        -> Set<BADownload> { [] }
    func backgroundDownload(_ finishedDownload: BADownload, finishedWithFileURL fileURL: URL) {}
}
SWIFT
    ! typecheck "$work/main-actor-$protocol.swift" || fail "a @MainActor $protocol conformed: Apple's refuses it"
    grep -q "conformance of 'LevelsExtension' to protocol 'BADownloaderExtension' crosses into main actor-isolated" \
        "$work/out" || { cat "$work/out" >&2; fail "the @MainActor $protocol failed for another reason"; }
done
echo "PASS: Apple's actor isolation holds for code written against bahost"
