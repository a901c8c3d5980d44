-- Levels, a small LÖVE game that ships small: its essential asset pack (the first level) is installed with it by
-- bahost; the bonus level is an on-demand pack it downloads while the player watches a progress bar, then plays.
-- Run it as the app: bahost launch com.example.game -- love Plugins/Love/levels-game
--
-- For the tests, it prints what happens as JSON lines, and with BAHOST_GAME_SCREENSHOT=PATH it saves one
-- screenshot while the bar is partway, and quits once the bonus level is on screen.
jit.off() -- the library calls back into Lua from ba_app_dispatch: keep those frames interpreted
local ba = require("backgroundassets")

local game = {intro = nil, bonus = nil, completed = 0, total = 0, status = "connecting", error = nil,
              shot = false, frames_with_bonus = 0}
local app

local function json_string(text)
    return '"' .. text:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
end

local function say(fields)
    local parts = {}
    for key, value in pairs(fields) do
        local shown = type(value) == "string" and json_string(value) or tostring(value)
        table.insert(parts, json_string(key) .. ":" .. shown)
    end
    table.sort(parts)
    io.write("{" .. table.concat(parts, ",") .. "}\n")
    io.flush()
end

function love.load()
    local err
    app, err = ba.connect()
    if not app then
        game.error = err
        say({event = "error", error = err})
        return
    end
    -- The essential pack was installed with the game: read at once, no waiting.
    game.intro, err = app:contents("intro/readme.txt")
    say({event = "intro", text = game.intro or "", error = err or ""})
    local last
    app:observe_packs(function(update)
        if update.id ~= "bonus" then return end
        if update.kind == "downloading" then game.completed, game.total = update.completed, update.total end
        game.status = update.kind
        if update.kind ~= last then say({event = "update", kind = update.kind}) end
        last = update.kind
    end)
    game.status = "waiting"
    app:ensure_pack("bonus", function(_, failure)
        if failure then
            game.error = failure
            say({event = "error", error = failure})
            return
        end
        game.bonus, err = app:contents("bonus/readme.txt")
        game.status = "ready"
        say({event = "bonus", text = game.bonus or "", error = err or ""})
    end)
end

function love.update()
    if app then app:poll() end
end

local function fraction()
    if game.bonus then return 1 end
    if game.total <= 0 then return 0 end
    return math.min(1, game.completed / game.total)
end

-- The bar's frame, and the fill the tests look for in the screenshot (pure green).
local BAR = {x = 40, y = 200, width = 560, height = 24}

function love.draw()
    love.graphics.clear(0.08, 0.08, 0.12)
    love.graphics.setColor(1, 1, 1)
    love.graphics.print("Levels", 40, 30, 0, 2, 2)
    love.graphics.print("Level 1: " .. (game.intro or "(not installed)"), 40, 100)
    if game.error then
        love.graphics.setColor(1, 0.3, 0.3)
        love.graphics.print(game.error, 40, 140)
        return
    end
    if game.bonus then
        love.graphics.print("Bonus level: " .. game.bonus, 40, 140)
    else
        love.graphics.print(string.format("Downloading the bonus level: %d%%", math.floor(fraction() * 100)), 40, 170)
    end
    -- A two-pixel white frame (filled rectangles: a line would be blended across pixel edges), the empty bar,
    -- then its fill.
    love.graphics.setColor(1, 1, 1)
    love.graphics.rectangle("fill", BAR.x - 2, BAR.y - 2, BAR.width + 4, BAR.height + 4)
    love.graphics.setColor(0.08, 0.08, 0.12)
    love.graphics.rectangle("fill", BAR.x, BAR.y, BAR.width, BAR.height)
    love.graphics.setColor(0, 1, 0)
    love.graphics.rectangle("fill", BAR.x, BAR.y, math.floor(BAR.width * fraction()), BAR.height)

    local screenshot = os.getenv("BAHOST_GAME_SCREENSHOT")
    if screenshot and not game.shot and not game.bonus and fraction() > 0.05 and fraction() < 0.95 then
        game.shot = true
        local shown = fraction()
        love.graphics.captureScreenshot(function(image)
            local file = assert(io.open(screenshot, "wb"))
            file:write(image:encode("png"):getString())
            file:close()
            say({event = "screenshot", path = screenshot, fraction = shown, barX = BAR.x, barY = BAR.y,
                 barWidth = BAR.width, barHeight = BAR.height})
        end)
    end
    if screenshot and game.bonus then
        game.frames_with_bonus = game.frames_with_bonus + 1
        if game.frames_with_bonus == 3 then
            app:disconnect()
            love.event.quit(0)
        end
    end
end
