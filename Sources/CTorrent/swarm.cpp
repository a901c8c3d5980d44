// The swarm half of bahost_torrent.h: one libtorrent session and the state of each file's swarm in it. Exceptions
// never cross into Swift: each entry point catches them and reports a sentence.
#include "bahost_torrent.h"

#include <libtorrent/address.hpp>
#include <libtorrent/alert_types.hpp>
#include <libtorrent/bencode.hpp>
#include <libtorrent/entry.hpp>
#include <libtorrent/extensions/smart_ban.hpp>
#include <libtorrent/peer_info.hpp>
#include <libtorrent/session.hpp>
#include <libtorrent/session_params.hpp>
#include <libtorrent/torrent_handle.hpp>
#include <libtorrent/torrent_info.hpp>
#include <libtorrent/torrent_status.hpp>

#include <netdb.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

void say(char *error, size_t error_size, std::string const &message) {
    if (error == nullptr || error_size == 0) return;
    std::snprintf(error, error_size, "%s", message.c_str());
}

// A rate as libtorrent takes it: an int, 0 for no limit.
int bounded_rate(int64_t rate) { return static_cast<int>(std::min<int64_t>(std::max<int64_t>(rate, 0), INT32_MAX)); }

struct Swarm {
    lt::torrent_handle handle;
    int64_t from_web_seed = 0;
    int64_t from_peers = 0;
    // The blocks received since the last look, and the endpoints known to be web seeds.
    struct Block {
        lt::tcp::endpoint from;
        int piece;
        int block;
    };
    std::vector<Block> blocks;
    std::set<lt::tcp::endpoint> web_seeds;
    // The web seed's server, as its URL's host resolved when the swarm was joined; its URL, and whether it is in use.
    std::set<lt::tcp::endpoint> web_seed_servers;
    std::string web_seed;
    bool web_seed_on = false;
    int banned = 0;
    int failed_pieces = 0;
    int peers = 0;
    // libtorrent said every piece is in, and the blocks before were counted: what `status_of` reports as whole, so
    // that the counts it gives with it are final. The last block's alert may follow the torrent's: whole is told
    // one look after libtorrent said so (`finishing` counts the looks down).
    bool whole = false;
    int finishing = 0;
    // The file's size and piece length, to count each block's bytes (the last is short).
    int64_t size = 0;
    int64_t piece_length = 0;
    // Paused because this machine serves nobody now (`hold_back`).
    bool paused_by_us = false;
    std::string error;
};

// The addresses a URL's host resolves to, with its port: "http://host:port/…" (80 and 443 by default).
std::set<lt::tcp::endpoint> servers_of(std::string const &url) {
    std::set<lt::tcp::endpoint> servers;
    auto const scheme = url.find("://");
    if (scheme == std::string::npos) return servers;
    std::string authority = url.substr(scheme + 3, url.find('/', scheme + 3) - scheme - 3);
    if (auto const at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
    std::string host = authority;
    std::string port = url.compare(0, scheme, "https") == 0 ? "443" : "80";
    if (!authority.empty() && authority[0] == '[') {
        auto const close = authority.find(']');
        if (close == std::string::npos) return servers;
        host = authority.substr(1, close - 1);
        if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
    } else if (auto const colon = authority.rfind(':'); colon != std::string::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
    }
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return servers;
    for (addrinfo *one = found; one != nullptr; one = one->ai_next) {
        lt::tcp::endpoint endpoint;
        if (one->ai_addrlen > endpoint.capacity()) continue;
        std::memcpy(endpoint.data(), one->ai_addr, one->ai_addrlen);
        endpoint.resize(one->ai_addrlen);
        servers.insert(endpoint);
    }
    freeaddrinfo(found);
    return servers;
}

lt::settings_pack settings_for(std::string const &listen, int64_t upload_rate) {
    lt::settings_pack pack;
    pack.set_str(lt::settings_pack::listen_interfaces, listen);
    // Nothing is announced beyond the network: peers are found by Local Service Discovery alone.
    pack.set_bool(lt::settings_pack::enable_dht, false);
    pack.set_bool(lt::settings_pack::enable_lsd, true);
    pack.set_bool(lt::settings_pack::enable_upnp, false);
    pack.set_bool(lt::settings_pack::enable_natpmp, false);
    pack.set_int(lt::settings_pack::local_service_announce_interval, 30);
    // Machines behind one address (containers, a NAT inside the house) are peers each.
    pack.set_bool(lt::settings_pack::allow_multiple_connections_per_ip, true);
    // TCP alone between machines on a LAN: libtorrent's uTP, made to yield on congested uplinks, carried a LAN's
    // transfer at a third of TCP's rate here (DECISIONS #61). A peer that refused a connection (its session still
    // opening its port) is tried again within seconds, not libtorrent's minute: on a LAN that costs nothing.
    pack.set_bool(lt::settings_pack::enable_outgoing_utp, false);
    pack.set_bool(lt::settings_pack::enable_incoming_utp, false);
    pack.set_int(lt::settings_pack::min_reconnect_time, 2);
    pack.set_int(lt::settings_pack::upload_rate_limit, bounded_rate(upload_rate));
    pack.set_int(lt::settings_pack::urlseed_wait_retry, 10);
    // A block's alert for each 16 KiB received tells who sent it: at 100 MB/s, 1,600 in each 250 ms look.
    pack.set_int(lt::settings_pack::alert_queue_size, 20000);
    lt::alert_category_t const alerts =
        lt::alert_category::error | lt::alert_category::peer | lt::alert_category::block_progress |
        lt::alert_category::status;
    pack.set_int(lt::settings_pack::alert_mask, static_cast<int>(static_cast<std::uint32_t>(alerts)));
    return pack;
}

// What a swarm may send. Serving, at most the session's rate: each swarm's own limit, since libtorrent leaves peers
// at private addresses (the only ones a LAN has) in a class of their own that neither the session's upload limit
// nor its unchoke slots reach, and setting that class's limit was not obeyed here (DECISIONS #61). Serving nobody:
// a whole file's swarm is paused (it only serves); one still downloading may send a byte a second, which never
// completes a 16 KiB block.
void hold_back(Swarm &one, bool serving, int64_t upload_rate) {
    if (serving) {
        one.handle.set_upload_limit(bounded_rate(upload_rate));
        if (one.paused_by_us) one.handle.resume();
        one.paused_by_us = false;
    } else if (one.whole) {
        if (!one.paused_by_us) one.handle.pause();
        one.paused_by_us = true;
    } else {
        one.handle.set_upload_limit(1);
    }
}


}  // namespace

struct bahost_swarm {
    std::unique_ptr<lt::session> session;
    std::mutex lock;
    // Whether peers may be sent anything, and how fast (`bahost_swarm_set_serving`).
    bool serving = true;
    int64_t upload_rate = 0;
    std::map<int64_t, Swarm> swarms;
    int64_t next = 1;
};

extern "C" bahost_swarm *bahost_swarm_start(const char *listen, int64_t upload_rate, char *error, size_t error_size) {
    try {
        // Of libtorrent's default plugins only smart ban: it tells which peer sent a piece that failed its hash.
        // Peer exchange (ut_pex) would tell peers of peers beyond what Local Service Discovery finds.
        std::vector<std::shared_ptr<lt::plugin>> plugins;
        lt::session_params params(settings_for(listen, upload_rate), plugins);
        auto swarm = std::make_unique<bahost_swarm>();
        swarm->session = std::make_unique<lt::session>(std::move(params));
        swarm->session->add_extension(&lt::create_smart_ban_plugin);
        swarm->upload_rate = upload_rate;
        return swarm.release();
    } catch (std::exception const &exception) {
        say(error, error_size, exception.what());
        return nullptr;
    }
}

extern "C" void bahost_swarm_stop(bahost_swarm *swarm) {
    try {
        delete swarm;
    } catch (...) {
    }
}

extern "C" void bahost_swarm_set_serving(bahost_swarm *swarm, int64_t upload_rate, int serving) {
    try {
        lt::settings_pack pack;
        pack.set_int(lt::settings_pack::upload_rate_limit, bounded_rate(upload_rate));
        pack.set_int(lt::settings_pack::unchoke_slots_limit, serving ? 8 : 0);
        swarm->session->apply_settings(std::move(pack));
        std::lock_guard<std::mutex> guard(swarm->lock);
        swarm->serving = serving != 0;
        swarm->upload_rate = upload_rate;
        for (auto &entry : swarm->swarms) hold_back(entry.second, swarm->serving, upload_rate);
    } catch (...) {
    }
}

extern "C" void bahost_swarm_ports(bahost_swarm *swarm, int *plain, int *ssl) {
    try {
        *plain = swarm->session->listen_port();
        *ssl = swarm->session->ssl_listen_port();
    } catch (...) {
        *plain = 0;
        *ssl = 0;
    }
}

extern "C" int64_t bahost_swarm_add(bahost_swarm *swarm, const bahost_swarm_file *file, char *error,
                                    size_t error_size) {
    try {
        std::string const name(file->name);
        if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) {
            say(error, error_size, "the file's name must be one path component");
            return -1;
        }
        std::string const root(reinterpret_cast<char const *>(file->pieces_root), 32);
        // BEP 52's info dictionary, from the trusted values alone: its hash is the swarm's identity.
        lt::entry torrent;
        lt::entry &info = torrent["info"];
        info["name"] = name;
        info["piece length"] = file->piece_length;
        info["meta version"] = 2;
        lt::entry &leaf = info["file tree"][name][""];
        leaf["length"] = file->size;
        leaf["pieces root"] = root;
        if (file->ssl_ca_pem != nullptr) info["ssl-cert"] = std::string(file->ssl_ca_pem);
        if (file->piece_layer != nullptr && file->piece_layer_size > 0) {
            torrent["piece layers"][root] =
                std::string(reinterpret_cast<char const *>(file->piece_layer), file->piece_layer_size);
        }
        std::vector<char> bytes;
        lt::bencode(std::back_inserter(bytes), torrent);
        lt::error_code failure;
        auto described = std::make_shared<lt::torrent_info>(bytes, failure, lt::from_span);
        if (failure) {
            say(error, error_size, "libtorrent refuses the file's identity: " + failure.message());
            return -1;
        }
        lt::add_torrent_params params;
        params.ti = described;
        params.save_path = file->save_path;
        if (file->web_seed != nullptr) params.url_seeds.push_back(file->web_seed);
        // Never queued behind others (libtorrent's automatic management seeds 5 at most). Added paused: it starts
        // once it is known here (each block it receives is counted) and, for an SSL torrent, has its certificate.
        params.flags &= ~lt::torrent_flags::auto_managed;
        params.flags |= lt::torrent_flags::paused;
        if (file->have_file) params.flags |= lt::torrent_flags::seed_mode;
        bool const ssl = file->ssl_ca_pem != nullptr;
        if (ssl && (file->ssl_cert_pem == nullptr || file->ssl_key_pem == nullptr || file->ssl_dh_pem == nullptr)) {
            say(error, error_size, "an SSL torrent needs this machine's certificate, key and DH parameters");
            return -1;
        }
        std::set<lt::tcp::endpoint> const servers =
            file->web_seed != nullptr ? servers_of(file->web_seed) : std::set<lt::tcp::endpoint>{};
        lt::torrent_handle handle = swarm->session->add_torrent(std::move(params), failure);
        if (failure) {
            say(error, error_size, "libtorrent cannot add the file: " + failure.message());
            return -1;
        }
        int64_t number = 0;
        {
            std::lock_guard<std::mutex> guard(swarm->lock);
            number = swarm->next++;
            swarm->swarms[number].handle = handle;
            swarm->swarms[number].web_seed_servers = servers;
            swarm->swarms[number].web_seed = file->web_seed != nullptr ? file->web_seed : "";
            swarm->swarms[number].web_seed_on = file->web_seed != nullptr;
            swarm->swarms[number].whole = file->have_file != 0;
            swarm->swarms[number].size = file->size;
            swarm->swarms[number].piece_length = file->piece_length;
            Swarm &added = swarm->swarms[number];
            if (swarm->serving) {
                handle.set_upload_limit(bounded_rate(swarm->upload_rate));
            } else if (added.whole) {
                added.paused_by_us = true;  // stays paused
            } else {
                handle.set_upload_limit(1);
            }
        }
        if (ssl) handle.set_ssl_certificate_buffer(file->ssl_cert_pem, file->ssl_key_pem, file->ssl_dh_pem);
        bool held_back = false;
        {
            std::lock_guard<std::mutex> guard(swarm->lock);
            held_back = swarm->swarms[number].paused_by_us;
        }
        if (!held_back) handle.resume();
        return number;
    } catch (std::exception const &exception) {
        say(error, error_size, exception.what());
        return -1;
    }
}

extern "C" void bahost_swarm_use_web_seed(bahost_swarm *swarm, int64_t number, int on) {
    try {
        std::lock_guard<std::mutex> guard(swarm->lock);
        auto found = swarm->swarms.find(number);
        if (found == swarm->swarms.end() || found->second.web_seed.empty()) return;
        Swarm &one = found->second;
        if (on && !one.web_seed_on) one.handle.add_url_seed(one.web_seed);
        if (!on && one.web_seed_on) one.handle.remove_url_seed(one.web_seed);
        one.web_seed_on = on != 0;
    } catch (...) {
    }
}

extern "C" void bahost_swarm_set_download_limit(bahost_swarm *swarm, int64_t number, int64_t limit) {
    try {
        std::lock_guard<std::mutex> guard(swarm->lock);
        auto found = swarm->swarms.find(number);
        if (found == swarm->swarms.end()) return;
        found->second.handle.set_download_limit(bounded_rate(limit));
    } catch (...) {
    }
}

extern "C" void bahost_swarm_remove(bahost_swarm *swarm, int64_t number) {
    try {
        std::lock_guard<std::mutex> guard(swarm->lock);
        auto found = swarm->swarms.find(number);
        if (found == swarm->swarms.end()) return;
        swarm->session->remove_torrent(found->second.handle);
        swarm->swarms.erase(found);
    } catch (...) {
    }
}

extern "C" int bahost_swarm_connect(bahost_swarm *swarm, int64_t number, const char *address, int port) {
    try {
        std::lock_guard<std::mutex> guard(swarm->lock);
        auto found = swarm->swarms.find(number);
        if (found == swarm->swarms.end()) return -1;
        found->second.handle.connect_peer(
            lt::tcp::endpoint(lt::make_address(address), static_cast<std::uint16_t>(port)));
        return 0;
    } catch (...) {
        return -1;
    }
}

extern "C" int bahost_swarm_status_of(bahost_swarm *swarm, int64_t number, bahost_swarm_status *status) {
    try {
        std::memset(status, 0, sizeof *status);
        std::lock_guard<std::mutex> guard(swarm->lock);
        auto found = swarm->swarms.find(number);
        if (found == swarm->swarms.end()) return -1;
        Swarm const &one = found->second;
        lt::torrent_status const now = one.handle.status();
        status->have = now.total_wanted_done;
        status->from_web_seed = one.from_web_seed;
        status->from_peers = one.from_peers;
        status->sent_to_peers = now.total_payload_upload;
        status->peers = one.peers;
        status->banned = one.banned;
        status->failed_pieces = one.failed_pieces;
        if (!one.error.empty() || now.errc) {
            status->state = BAHOST_SWARM_FAILED;
            say(status->error, sizeof status->error, one.error.empty() ? now.errc.message() : one.error);
        } else if (now.state == lt::torrent_status::checking_files ||
                   now.state == lt::torrent_status::checking_resume_data) {
            status->state = BAHOST_SWARM_CHECKING;
        } else if (one.whole) {
            status->state = BAHOST_SWARM_WHOLE;
        } else {
            status->state = BAHOST_SWARM_DOWNLOADING;
        }
        return 0;
    } catch (...) {
        return -1;
    }
}

extern "C" void bahost_swarm_pump(bahost_swarm *swarm, int timeout_ms) {
    try {
        swarm->session->wait_for_alert(lt::milliseconds(timeout_ms));
        std::vector<lt::alert *> alerts;
        swarm->session->pop_alerts(&alerts);
        std::lock_guard<std::mutex> guard(swarm->lock);
        auto find = [&](lt::torrent_handle const &handle) -> Swarm * {
            for (auto &entry : swarm->swarms) {
                if (entry.second.handle == handle) return &entry.second;
            }
            return nullptr;
        };
        for (lt::alert *alert : alerts) {
            if (auto *block = lt::alert_cast<lt::block_finished_alert>(alert)) {
                if (Swarm *one = find(block->handle)) one->blocks.push_back(
                    {block->endpoint, static_cast<int>(block->piece_index), block->block_index});
            } else if (auto *finished = lt::alert_cast<lt::torrent_finished_alert>(alert)) {
                if (Swarm *one = find(finished->handle)) one->finishing = 2;
            } else if (auto *failed = lt::alert_cast<lt::hash_failed_alert>(alert)) {
                if (Swarm *one = find(failed->handle)) one->failed_pieces++;
            } else if (auto *ban = lt::alert_cast<lt::peer_ban_alert>(alert)) {
                if (Swarm *one = find(ban->handle)) one->banned++;
            } else if (auto *error = lt::alert_cast<lt::torrent_error_alert>(alert)) {
                if (Swarm *one = find(error->handle)) one->error = error->error.message();
            } else if (auto *file = lt::alert_cast<lt::file_error_alert>(alert)) {
                if (Swarm *one = find(file->handle)) one->error = "the file: " + file->error.message();
            }
        }
        // Each block received, by who sent it: a web seed (the CDN) or a peer. A web seed's connection is known by
        // its kind while it is open, and by its server's address, which a connection already closed still has.
        std::vector<lt::peer_info> connected;
        for (auto &entry : swarm->swarms) {
            Swarm &one = entry.second;
            one.handle.get_peer_info(connected);
            int peers = 0;
            for (lt::peer_info const &peer : connected) {
                if (peer.connection_type & (lt::peer_info::web_seed | lt::peer_info::http_seed)) {
                    one.web_seeds.insert(peer.ip);
                } else {
                    peers++;
                }
            }
            one.peers = peers;
            if (one.finishing > 0 && --one.finishing == 0) {
                one.whole = true;
                if (!swarm->serving) hold_back(one, false, 0);
            }
            if (one.blocks.empty()) continue;
            for (Swarm::Block const &block : one.blocks) {
                int64_t const start = static_cast<int64_t>(block.piece) * one.piece_length +
                    static_cast<int64_t>(block.block) * lt::default_block_size;
                int64_t const bytes =
                    std::max<int64_t>(0, std::min<int64_t>(lt::default_block_size, one.size - start));
                if (one.web_seeds.count(block.from) != 0 || one.web_seed_servers.count(block.from) != 0) {
                    one.from_web_seed += bytes;
                } else {
                    one.from_peers += bytes;
                }
            }
            one.blocks.clear();
        }
    } catch (...) {
    }
}
