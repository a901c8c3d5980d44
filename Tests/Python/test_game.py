"""A real game engine: the LÖVE game (Plugins/Love/levels-game, LuaJIT's FFI over ba/app_asset_packs.h) run under
Xvfb as the launched app. At launch it reads its essential pack, which the install put there; it shows a progress
bar while its on-demand pack downloads (at nginx's 1 MB/s), then reads and shows that pack. The test checks what the
game printed, and a screenshot it took during the download: the bar is drawn, partly filled, as far as it said."""

import os
import struct
import subprocess
import zlib

from conftest import REPO, events, publish

GAME = os.path.join(REPO, "Plugins", "Love", "levels-game")


def png_pixels(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB or RGBA PNG, as LÖVE writes it."""
    with open(path, "rb") as file:
        data = file.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat = 8, b""
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    channels = 4 if color == 6 else 3
    raw, stride, rows, previous = zlib.decompress(idat), width * channels, [], bytearray(width * channels)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, corner = previous[x], previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def test_the_game_reads_its_essential_pack_and_shows_a_bar_while_the_next_one_downloads(
        managed_service, nginx, tmp_path):
    bonus = os.urandom(3_000_000)
    publish(managed_service, nginx, tmp_path, [
        ("intro", {"essential": {"installationEventTypes": ["firstInstallation"]}},
         {"intro/readme.txt": b"the first level"}),
        ("bonus", {"onDemand": {}}, {"bonus/readme.txt": b"the bonus level", "bonus/level.bin": bonus}),
    ], folder="slow/packs")
    managed_service.install()
    screenshot = str(tmp_path / "during-download.png")
    environment = dict(managed_service.env, BAHOST_GAME_SCREENSHOT=screenshot)
    command = managed_service.launch_command("xvfb-run", "-a", "-s", "-screen 0 640x360x24", "love", GAME)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0, result.stdout + result.stderr
    found = events(result.stdout)
    said = lambda name: [e for e in found if e.get("event") == name]  # noqa: E731
    assert said("intro") and said("intro")[0]["text"] == "the first level", result.stdout
    assert [e["kind"] for e in said("update")][:1] == ["began"], result.stdout
    assert "downloading" in [e["kind"] for e in said("update")], result.stdout
    assert said("bonus") and said("bonus")[0]["text"] == "the bonus level", result.stdout
    assert not said("error"), result.stdout

    shot = said("screenshot")
    assert shot, "no screenshot during the download: " + result.stdout
    shot = shot[0]
    width, height, rows = png_pixels(screenshot)
    assert (width, height) == (640, 360)
    row = rows[shot["barY"] + shot["barHeight"] // 2]
    green = lambda pixel: pixel[1] > 200 and pixel[0] < 60 and pixel[2] < 60  # noqa: E731
    filled = sum(1 for x in range(shot["barX"], shot["barX"] + shot["barWidth"]) if green(row[x]))
    # Partly filled, as far as the game said when it took the picture; the rest of the bar is empty.
    assert 0 < filled < shot["barWidth"], filled
    assert abs(filled - int(shot["barWidth"] * shot["fraction"])) <= 2, (filled, shot)
    assert all(green(row[x]) for x in range(shot["barX"], shot["barX"] + filled))
    assert not any(green(row[x]) for x in range(shot["barX"] + filled + 1, shot["barX"] + shot["barWidth"]))
    # The frame around it is drawn (white, two pixels out).
    assert min(row[shot["barX"] - 2]) > 200, row[shot["barX"] - 2]
