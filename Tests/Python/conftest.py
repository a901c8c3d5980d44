"""The Python binding's tests against real parts: nginx on loopback (plain http, a slow and a password-protected
folder), a real `bahost daemon`, the example extension, and app processes started by `bahost launch` (an app's
identity is its launch), written in Python against `backgroundassets`. Run by Tests/Python/run.sh."""

import json
import os
import plistlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BAHOST_BUILD", os.path.join(REPO, ".build", "debug"))
BAHOST = os.path.join(BUILD, "bahost")
LEVELS_APP = os.path.join(REPO, "Plugins", "Python", "levels_app.py")
USER, PASSWORD = "player", "secret-levels"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Nginx:
    def __init__(self, folder):
        self.www = os.path.join(folder, "www")
        os.makedirs(os.path.join(folder, "logs"))
        os.makedirs(os.path.join(self.www, "slow"))
        os.makedirs(os.path.join(self.www, "private"))
        os.chmod(folder, 0o755)
        os.chmod(self.www, 0o755)
        self.port = free_port()
        hashed = subprocess.run(["openssl", "passwd", "-apr1", PASSWORD], capture_output=True, text=True,
                                check=True).stdout.strip()
        with open(os.path.join(folder, "htpasswd"), "w") as file:
            file.write(f"{USER}:{hashed}\n")
        config = os.path.join(folder, "nginx.conf")
        with open(config, "w") as file:
            file.write(f"""daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/logs/error.log;
events {{ worker_connections 64; }}
http {{
    access_log {folder}/logs/access.log;
    client_body_temp_path {folder}; proxy_temp_path {folder}; fastcgi_temp_path {folder};
    uwsgi_temp_path {folder}; scgi_temp_path {folder};
    server {{
        listen 127.0.0.1:{self.port};
        root {self.www};
        location /slow/ {{ limit_rate 1m; }}
        location /private/ {{ auth_basic "levels"; auth_basic_user_file {folder}/htpasswd; }}
    }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-c", config, "-p", folder], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start")

    def serve(self, path, data):
        """Serves `data` at `path`; returns its URL."""
        file = os.path.join(self.www, path)
        os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "wb") as out:
            out.write(data)
        os.chmod(file, 0o644)
        return self.url(path)

    def url(self, path):
        return f"http://localhost:{self.port}/{path}"


@pytest.fixture(scope="session")
def nginx():
    folder = tempfile.mkdtemp(prefix="bahost-python-nginx-")
    server = Nginx(folder)
    yield server
    server.process.terminate()
    server.process.wait()
    shutil.rmtree(folder, ignore_errors=True)


class Service:
    """A daemon with one app installed and launched: `com.example.levels`, its extension the Swift example."""

    def __init__(self, folder, nginx, managed=False, extra=()):
        self.folder, self.nginx, self.extra = folder, nginx, list(extra)
        self.socket = os.path.join(folder, "service.sock")
        self.data_root = os.path.join(folder, "data")
        self.log = os.path.join(folder, "daemon.log")
        # A runtime folder of its own, empty as on a fresh login: what the service and its apps keep there (the
        # exclusive-control locks) must be made by whoever needs it first, and no other test's daemon shares it.
        runtime = os.path.join(folder, "runtime")
        os.makedirs(runtime, mode=0o700)
        # And the person's settings of its own (`bahost settings`), never those of whoever runs the tests.
        self.env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "XDG_CONFIG_HOME": os.path.join(folder, "config")}
        self.app = "com.example.levels"
        self.group = "group.com.example.levels"
        self.dir = f"py-{uuid.uuid4().hex[:8]}"
        self.start()
        manifest_url = (nginx.url(f"{self.dir}/download-manifest.json") if managed
                        else nginx.serve(f"{self.dir}/manifest.json", b'{"assets": []}'))
        app_folder = os.path.join(folder, "app")
        os.makedirs(app_folder)
        info = {
            "CFBundleIdentifier": self.app, "BAAppGroupID": self.group, "BAManifestURL": manifest_url,
            "BAInitialDownloadRestrictions": {"BADownloadAllowance": 100_000_000,
                                              "BAEssentialDownloadAllowance": 100_000_000,
                                              "BADownloadDomainAllowList": ["localhost"]},
            "BAMaxInstallSize": 100_000_000,
        }
        if managed:
            info["BAHasManagedAssetPacks"] = True
        with open(os.path.join(app_folder, "Info.plist"), "wb") as file:
            plistlib.dump(info, file)
        shutil.copy(os.path.join(BUILD, "libExampleExtension.so"), os.path.join(app_folder, "extension.so"))
        self.app_folder = app_folder

    def start(self):
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [BAHOST, "daemon", "--socket", self.socket, "--data-root", self.data_root, "--development",
                 "--allow-insecure-loopback", "--retry-delay", "0.05", "--scheduler-interval", "3600",
                 "--apps-folder", os.path.join(self.folder, "apps"), *self.extra], stdout=log, stderr=log,
                env=self.env)
        for _ in range(400):
            if os.path.exists(self.socket) and self.bahost("debug", "status").returncode == 0:
                return
            assert self.process.poll() is None, self.log_text()
            time.sleep(0.025)
        raise RuntimeError("the daemon did not start: " + self.log_text())

    def install(self):
        result = self.bahost("install", self.app_folder, "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        result = self.bahost("launch", self.app)
        assert result.returncode == 0, result.stdout + result.stderr

    def stop(self, signal_number=signal.SIGTERM):
        self.process.send_signal(signal_number)
        self.process.wait()

    def bahost(self, *arguments):
        return subprocess.run([BAHOST, *arguments, "--socket", self.socket], capture_output=True, text=True,
                              env=self.env)

    def log_text(self):
        with open(self.log) as file:
            return file.read()

    def downloads(self):
        result = self.bahost("debug", "downloads", "--app", self.app, "--json")
        rows = json.loads(result.stdout.strip().splitlines()[-1]).get("downloads", [])
        return {row["identifier"]: row for row in rows}

    def launch_command(self, program, *arguments):
        """`bahost launch` running a Python program (a .py file) or any other command as the app."""
        interpreter = [sys.executable] if program.endswith(".py") else []
        return [BAHOST, "launch", self.app, "--socket", self.socket, "--", *interpreter, program, *arguments]

    def run_app(self, *arguments, program=LEVELS_APP, timeout=90):
        """Runs the app to its end as the launched app; returns its status and its JSON lines."""
        result = subprocess.run(self.launch_command(program, *arguments, "--json"), capture_output=True, text=True,
                                env=self.env, timeout=timeout)
        return result.returncode, events(result.stdout), result.stdout + result.stderr

    def start_app(self, *arguments, program=LEVELS_APP):
        return subprocess.Popen(self.launch_command(program, *arguments, "--json"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env)

    def container(self):
        return os.path.join(self.data_root, "containers", self.group)


def publish(service, nginx, tmp_path, packs, folder="packs"):
    """Packages each (ID, download policy, {path: bytes}) with `bahost pack`, serves the archives under `folder`
    (`slow/…` at 1 MB/s) and their download manifest where the managed app's Info.plist points."""
    archives = []
    for id, policy, files in packs:
        source = tmp_path / f"{id}-source"
        for path, data in files.items():
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            (source / path).write_bytes(data)
        (source / "Manifest.json").write_text(json.dumps(
            {"assetPackID": id, "downloadPolicy": policy, "fileSelectors": [{"directory": id}]}))
        archive = tmp_path / f"{id}.tar.zst"
        subprocess.run([BAHOST, "pack", "package", str(source / "Manifest.json"), "-o", str(archive)], check=True,
                       capture_output=True)
        nginx.serve(f"{folder}/{service.dir}/{id}", archive.read_bytes())
        archives.append(str(archive))
    manifest = tmp_path / "download-manifest.json"
    subprocess.run([BAHOST, "pack", "download-manifest", "create", *archives, "--download-base-url",
                    nginx.url(f"{folder}/{service.dir}/"), "--output-path", str(manifest)], check=True,
                   capture_output=True)
    nginx.serve(f"{service.dir}/download-manifest.json", manifest.read_bytes())


def events(text):
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            pass
    return found


def wait_until(condition, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def running(service, install=True):
    """Yields the service (installed and launched unless told not to), and kills its daemon afterwards."""
    if install:
        service.install()
    yield service
    if service.process.poll() is None:
        service.process.kill()
        service.process.wait()


@pytest.fixture
def service(nginx, tmp_path):
    yield from running(Service(str(tmp_path), nginx))


@pytest.fixture
def impatient_service(nginx, tmp_path):
    """A service that waits 1 s for the app's callbacks (`--app-callback-timeout 1`)."""
    yield from running(Service(str(tmp_path), nginx, extra=["--app-callback-timeout", "1"]))


@pytest.fixture
def managed_service(nginx, tmp_path):
    """A managed app's service, not installed yet: the test publishes its packs first."""
    yield from running(Service(str(tmp_path), nginx, managed=True), install=False)
