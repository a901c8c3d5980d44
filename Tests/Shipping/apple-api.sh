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
echo "PASS: Apple's actor isolation holds for code written against bahost"
