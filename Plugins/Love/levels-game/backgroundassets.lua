-- backgroundassets.lua: bahost's app API for LuaJIT (LÖVE, or any LuaJIT program), through its FFI over
-- libbackgroundassets (ba/app.h, ba/app_asset_packs.h). Copy it into a game. Callbacks run inside
-- `poll()`, on the game's thread: call it once a frame (it never blocks).
--
--   local ba = require("backgroundassets")
--   local app = assert(ba.connect())
--   app:observe_packs(function(update) ... end)
--   app:ensure_pack("bonus", function(id, err) ... end)
--   function love.update() app:poll() end
local ffi = require("ffi")

ffi.cdef [[
typedef struct ba_version { uint32_t major, minor; } ba_version_t;
typedef struct ba_error { uint32_t struct_size; int64_t code; char domain[64]; char message[512]; } ba_error_t;
typedef struct ba_app ba_app_t;
typedef struct ba_app_options {
    uint32_t struct_size; int32_t callback_mode; const char *app_identifier; const char *socket_path;
} ba_app_options_t;
typedef struct ba_asset_pack {
    uint32_t struct_size; const char *id; int64_t version; int64_t download_size; const char *user_info_json;
} ba_asset_pack_t;
typedef struct ba_asset_pack_update {
    uint32_t struct_size; int32_t kind; const ba_asset_pack_t *pack; int64_t completed; int64_t total;
    const ba_error_t *error;
} ba_asset_pack_update_t;
typedef void (*ba_asset_pack_update_handler_t)(void *context, const ba_asset_pack_update_t *update);
typedef void (*ba_asset_pack_completion_t)(void *context, const char *id, const ba_error_t *error);
ba_version_t ba_app_library_version(void);
bool ba_app_connect(const ba_app_options_t *options, ba_app_t **app, ba_error_t *error);
void ba_app_disconnect(ba_app_t *app);
int ba_app_dispatch(ba_app_t *app);
bool ba_app_set_asset_pack_observer(ba_app_t *app, ba_asset_pack_update_handler_t handler, void *context,
                                    ba_error_t *error);
bool ba_app_ensure_asset_pack(ba_app_t *app, const char *id, bool require_latest, ba_asset_pack_completion_t done,
                              void *context, ba_error_t *error);
bool ba_app_asset_pack_contents(ba_app_t *app, const char *path, const char *pack_id, void **data, size_t *size,
                                ba_error_t *error);
void ba_app_free(void *data);
]]

local lib = ffi.load(os.getenv("BACKGROUNDASSETS_LIBRARY") or "libbackgroundassets.so.1")
assert(lib.ba_app_library_version().major == 1, "backgroundassets: the C library speaks another major version")

local M = {UPDATE = {"began", "paused", "downloading", "finished", "failed"}}
local App = {}
App.__index = App

local function new_error()
    local err = ffi.new("ba_error_t")
    err.struct_size = ffi.sizeof("ba_error_t")
    return err
end

-- "DOMAIN CODE: message", as the other bindings describe an error.
local function describe(err)
    return string.format("%s %d: %s", ffi.string(err.domain), tonumber(err.code), ffi.string(err.message))
end
M.describe = describe

-- Connects as the app `bahost launch` started; nil and the error's description when refused.
function M.connect()
    local options = ffi.new("ba_app_options_t")
    options.struct_size = ffi.sizeof("ba_app_options_t")
    options.callback_mode = 1 -- BA_APP_CALLBACKS_ON_DISPATCH: callbacks run inside poll()
    local handle, err = ffi.new("ba_app_t *[1]"), new_error()
    if not lib.ba_app_connect(options, handle, err) then return nil, describe(err) end
    return setmetatable({handle = handle[0], callbacks = {}}, App)
end

-- Runs the callbacks waiting now; call it once a frame.
function App:poll() return lib.ba_app_dispatch(self.handle) end

-- handler({kind = "began"|"paused"|"downloading"|"finished"|"failed", id = ..., completed = ..., total = ...,
-- error = "..."}) for every pack's status updates.
function App:observe_packs(handler)
    local callback = ffi.cast("ba_asset_pack_update_handler_t", function(_, update)
        handler({kind = M.UPDATE[update.kind + 1], id = ffi.string(update.pack.id),
                 completed = tonumber(update.completed), total = tonumber(update.total),
                 error = update.error ~= nil and describe(update.error) or nil})
    end)
    table.insert(self.callbacks, callback)
    local err = new_error()
    if not lib.ba_app_set_asset_pack_observer(self.handle, callback, nil, err) then return false, describe(err) end
    return true
end

-- Makes the pack available (downloading it if needed); done(id, error_or_nil) runs inside poll().
function App:ensure_pack(id, done)
    local callback
    callback = ffi.cast("ba_asset_pack_completion_t", function(_, name, err)
        done(ffi.string(name), err ~= nil and describe(err) or nil)
    end)
    table.insert(self.callbacks, callback)
    local err = new_error()
    if not lib.ba_app_ensure_asset_pack(self.handle, id, false, callback, nil, err) then return false, describe(err) end
    return true
end

-- The bytes of a file in the packs' namespace (pack_id nil: any pack), or nil and the error.
function App:contents(path, pack_id)
    local data, size, err = ffi.new("void *[1]"), ffi.new("size_t[1]"), new_error()
    if not lib.ba_app_asset_pack_contents(self.handle, path, pack_id, data, size, err) then return nil, describe(err) end
    local text = ffi.string(data[0], size[0])
    lib.ba_app_free(data[0])
    return text
end

function App:disconnect()
    lib.ba_app_disconnect(self.handle)
    for _, callback in ipairs(self.callbacks) do callback:free() end
    self.callbacks = {}
end

return M
