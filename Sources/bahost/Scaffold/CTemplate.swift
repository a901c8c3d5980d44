/// A C extension project: one source file with every entry point stubbed with Apple's documentation, and a Makefile
/// that builds it against the installed SDK (`pkg-config --cflags bahost`) and tests its budget with `bahost check`.
struct CTemplate {
    let scaffold: ExtensionScaffold

    private var name: String { scaffold.name }

    var makefile: String {
        // Recipes need tabs.
        """
        # \(name): a bahost extension in C. `make` builds lib\(name).so; `make test` holds it to its budget.
        CFLAGS ?= -O2 -g -Wall -Wextra -Werror
        BAHOST ?= bahost
        BAHOST_CFLAGS := $(shell pkg-config --cflags bahost)
        ifneq ($(.SHELLSTATUS),0)
        $(error pkg-config cannot find bahost: install it (scripts/install.sh or the .deb), or set PKG_CONFIG_PATH)
        endif

        lib\(name).so: \(name).c
        \t$(CC) $(CFLAGS) $(BAHOST_CFLAGS) -shared -fPIC -o $@ $< $(LDFLAGS)

        # The extension must answer the install request within 0.5 s of a 2 s window (BackgroundAssetsTesting's rule).
        test: lib\(name).so
        \t$(BAHOST) check --plugin ./lib\(name).so \(scaffold.managed
                ? "--asset-pack intro" : "--event install --manifest \(scaffold.manifestFile) --app-group \(scaffold.appGroup)") --budget 2 --within 0.5

        clean:
        \trm -f lib\(name).so

        .PHONY: test clean

        """
    }

    var extensionSource: String {
        #"""
        /* \#(name): the app's \#(scaffold.managed ? "managed asset-pack" : "asset-downloader") extension, in C against <ba/ba.h>.
         * Every entry point Apple's \#(scaffold.managed ? "ManagedDownloaderExtension" : "BADownloaderExtension") has is here,
         * with Apple's documentation; a NULL one gets Apple's default behaviour. Each says on which thread it runs. */
        #include <ba/ba.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/stat.h>

        #define APP_GROUP "\#(scaffold.appGroup)"

        static const ba_host_t *host;

        static void say(ba_log_level_t level, const char *message) { host->log(host, level, message); }

        \#(scaffold.managed ? managedEntryPoints : unmanagedEntryPoints)
        /* [entry thread] A download has tried to start but received an authentication challenge. Answer exactly once
         * through reply->complete, from any thread. */
        static void did_receive_challenge(const ba_extension_t *ext, const ba_download_t *download,
                                          const ba_auth_challenge_t *challenge, const ba_challenge_reply_t *reply) {
            (void)ext;
            (void)download;
            (void)challenge;
            reply->complete(reply, BA_CHALLENGE_PERFORM_DEFAULT_HANDLING, NULL, NULL);
        }

        /* [terminate thread, possibly while another entry point runs] Called shortly before the extension is
         * terminated, when its window's time is up: save state quickly. */
        static void will_terminate(const ba_extension_t *ext) {
            (void)ext;
            say(BA_LOG_INFO, "extensionWillTerminate");
        }

        static const ba_extension_t extension = {
            .struct_size = sizeof extension,
        \#(scaffold.managed
            ? "    /* As Apple advises for a managed extension, the host's defaults handle the downloads themselves. */\n    .should_download_asset_pack = should_download_asset_pack,"
            : "    .downloads_for_request = downloads_for_request,\n    .download_failed = download_failed,\n    .download_finished = download_finished,")
            .did_receive_challenge = did_receive_challenge,
            .will_terminate = will_terminate,
        };

        /* [loader thread] Keep the host's table (it lives as long as the process) and hand over ours, or NULL to refuse. */
        static const ba_extension_t *init(const ba_host_t *h) {
            host = h;
            return &extension;
        }

        static const ba_entry_t entry = {
            .struct_size = sizeof entry,
            .abi_version = BA_ABI_VERSION,
            .identifier = "\#(scaffold.appIdentifier).extension",
            .init = init,
        };

        BA_EXPORT const ba_entry_t *ba_extension_entry(void) { return &entry; }

        """#
    }

    private var unmanagedEntryPoints: String {
        #"""
        /* [entry thread] Invoked by the system when the extension should check for updated content, upon the events
         * of ba_content_request_t. Add each download to schedule to `sink`: scheduling through the host is refused
         * while this runs. manifest_path is read-only and is deleted after this returns; copy it to keep it.
         * The manifest here has one asset a line: IDENTIFIER SIZE essential|optional URL [SHA256]. */
        static void downloads_for_request(const ba_extension_t *ext, int32_t request, const char *manifest_path,
                                          const ba_app_extension_info_t *info, const ba_download_sink_t *sink) {
            (void)ext;
            (void)info;
            FILE *manifest = fopen(manifest_path, "r");
            if (!manifest) {
                say(BA_LOG_ERROR, "cannot open the manifest");
                return;
            }
            /* Essential downloads are allowed only while the app is installed or updated. */
            bool essential_allowed = request == BA_CONTENT_REQUEST_INSTALL || request == BA_CONTENT_REQUEST_UPDATE;
            char line[4096], identifier[256], necessity[16], url[2048], sha256[80];
            long long size;
            while (fgets(line, sizeof line, manifest)) {
                if (line[0] == '#' || line[0] == '\n') continue;
                sha256[0] = 0;
                int fields = sscanf(line, "%255s %lld %15s %2047s %79s", identifier, &size, necessity, url, sha256);
                if (fields < 4) continue;
                bool essential = essential_allowed && strcmp(necessity, "essential") == 0;
                ba_download_t download = {
                    .struct_size = sizeof download,
                    .kind = BA_DOWNLOAD_KIND_URL,
                    .identifier = identifier,
                    .url = url,
                    .application_group_identifier = APP_GROUP,
                    .file_size = size,
                    .priority = essential ? BA_DOWNLOAD_PRIORITY_MAX : BA_DOWNLOAD_PRIORITY_DEFAULT,
                    .essential = essential,
                    .sha256 = fields == 5 ? sha256 : NULL,
                };
                sink->add(sink, &download); /* copied at once; false (and a line in the report) when malformed */
            }
            fclose(manifest);
        }

        /* [entry thread] A download has failed and there is no app delegate to handle it. The app's manifest arrives
         * here too (kind BA_DOWNLOAD_KIND_MANIFEST). It may be rescheduled through the host. */
        static void download_failed(const ba_extension_t *ext, const ba_download_t *download, const ba_error_t *error) {
            (void)ext;
            char message[1024];
            snprintf(message, sizeof message, "%s failed: %s", download->identifier, error->message);
            say(BA_LOG_WARNING, message);
            if (download->kind == BA_DOWNLOAD_KIND_URL && download->essential) {
                /* An essential download that failed may be retried as a non-essential one. */
                ba_download_t retry = *download;
                retry.essential = false;
                ba_error_t schedule_error = {.struct_size = sizeof schedule_error};
                if (!host->schedule_download(host, &retry, &schedule_error)) say(BA_LOG_ERROR, schedule_error.message);
            }
        }

        /* [entry thread] A download has finished and there is no app delegate to handle it. The file at file_path
         * must be moved before this returns, or it is deleted; move it rather than copy it. The host names the app
         * group's container in BAHOST_APP_GROUP_CONTAINER. */
        static void download_finished(const ba_extension_t *ext, const ba_download_t *download, const char *file_path) {
            (void)ext;
            const char *container = getenv("BAHOST_APP_GROUP_CONTAINER");
            char assets[2048], destination[3072];
            if (!container || strchr(download->identifier, '/')) return;
            snprintf(assets, sizeof assets, "%s/Assets", container);
            mkdir(assets, 0700);
            snprintf(destination, sizeof destination, "%s/%s", assets, download->identifier);
            if (rename(file_path, destination) != 0) say(BA_LOG_ERROR, "cannot move a finished download into Assets");
        }

        """#
    }

    private var managedEntryPoints: String {
        #"""
        /* [entry thread] Whether the system may download this pack. By default, the system automatically downloads
         * all applicable asset packs with either essential or prefetch download policies for the current
         * installation event type. */
        static bool should_download_asset_pack(const ba_extension_t *ext, const ba_asset_pack_t *pack) {
            (void)ext;
            (void)pack;
            return true;
        }

        """#
    }
}
