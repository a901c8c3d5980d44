// libtorrent-rasterbar behind bahost_torrent.h. Exceptions never cross into Swift: each entry point catches them
// and reports a sentence.
#include "bahost_torrent.h"

#include <libtorrent/bencode.hpp>
#include <libtorrent/create_torrent.hpp>
#include <libtorrent/entry.hpp>
#include <libtorrent/file_storage.hpp>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace {

void say(char *error, size_t error_size, std::string const &message) {
    if (error == nullptr || error_size == 0) return;
    std::snprintf(error, error_size, "%s", message.c_str());
}

}  // namespace

extern "C" int bahost_torrent_hash_file(const char *path, int64_t piece_length, uint8_t root[32], uint8_t *layer,
                                        size_t layer_capacity, size_t *layer_size, char *error, size_t error_size) {
    try {
        *layer_size = 0;
        if (piece_length < 16 * 1024 || (piece_length & (piece_length - 1)) != 0 || piece_length > (1 << 30)) {
            say(error, error_size, "the piece length must be a power of two from 16 KiB to 1 GiB");
            return -1;
        }
        std::string const file(path);
        auto const slash = file.find_last_of('/');
        std::string const folder = slash == std::string::npos ? "." : (slash == 0 ? "/" : file.substr(0, slash));
        lt::file_storage storage;
        lt::add_files(storage, file, lt::create_flags_t{});
        if (storage.num_files() != 1) {
            say(error, error_size, "not a regular file");
            return -1;
        }
        if (storage.total_size() == 0) {
            say(error, error_size, "an empty file has no pieces root");
            return -1;
        }
        lt::create_torrent torrent(storage, static_cast<int>(piece_length), lt::create_torrent::v2_only);
        lt::error_code failure;
        lt::set_piece_hashes(torrent, folder, failure);
        if (failure) {
            say(error, error_size, "reading the file: " + failure.message());
            return -1;
        }
        lt::entry const generated = torrent.generate();
        // The file tree holds the one file under its name, its hashes under the key "".
        auto const &tree = generated["info"]["file tree"].dict();
        if (tree.size() != 1) {
            say(error, error_size, "libtorrent made a file tree of more than one file");
            return -1;
        }
        std::string const &pieces_root = tree.begin()->second[""]["pieces root"].string();
        if (pieces_root.size() != 32) {
            say(error, error_size, "libtorrent made no pieces root");
            return -1;
        }
        std::memcpy(root, pieces_root.data(), 32);
        if (lt::entry const *layers = generated.find_key("piece layers")) {
            auto const &found = layers->dict();
            auto const mine = found.find(pieces_root);
            if (mine != found.end()) {
                std::string const &hashes = mine->second.string();
                if (hashes.size() > layer_capacity) {
                    say(error, error_size, "the piece layer is larger than the room given for it");
                    return -1;
                }
                std::memcpy(layer, hashes.data(), hashes.size());
                *layer_size = hashes.size();
            }
        }
        return 0;
    } catch (std::exception const &exception) {
        say(error, error_size, exception.what());
        return -1;
    }
}
