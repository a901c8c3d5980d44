"""A managed app in Python, as the launched app: lists the packs, makes one available while iterating its status
updates, reads it, misuses the API, removes the pack. Prints one JSON object a line."""

import asyncio
import json

import backgroundassets as ba


def say(**fields):
    print(json.dumps(fields, sort_keys=True), flush=True)


async def main():
    manager = ba.AssetPackManager.shared()
    say(packs=[(p.id, p.version) for p in manager.asset_packs()])
    say(status=int(manager.status("bonus")), local=int(manager.local_status("bonus")))

    async def watch():
        return [update.kind.name async for update in manager.status_updates("bonus")]

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0.2)
    await manager.ensure_local_availability(manager.asset_pack("bonus"))
    updates = await asyncio.wait_for(watcher, 10)
    # Repeated progress counts once, as the Swift app collects it.
    collapsed = [kind for index, kind in enumerate(updates) if index == 0 or kind != updates[index - 1]]
    say(ensured=manager.is_available_locally("bonus"), updates=collapsed)
    say(read=manager.contents("bonus/readme.txt").decode(), url=manager.url("bonus/readme.txt"))
    try:
        manager.asset_pack("nope")
    except ba.ManagedBackgroundAssetsError as error:
        say(missing_pack=[error.domain, error.code, error.message])
    try:
        manager.contents("bonus/none.txt")
    except ba.ManagedBackgroundAssetsError as error:
        say(missing_file=[error.domain, error.code, error.message])
    try:
        await manager.ensure_local_availability("nope")
    except ba.ManagedBackgroundAssetsError as error:
        say(ensure_missing=[error.domain, error.code])
    # No localized pack in this manifest: no language to list, none resolved.
    say(languages=[manager.primary_language, manager.available_languages, manager.locally_available_languages])
    manager.remove("bonus")
    say(removed=not manager.is_available_locally("bonus"))
    ba.disconnect()


asyncio.run(main())
