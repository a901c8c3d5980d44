# Sourced by the shipping tests: nginx serving a folder over plain http on a free port of the loopback address.
# start_loopback_nginx FOLDER WWW: nginx's files (config, logs, temp) in FOLDER, serving WWW; sets nginx_port and
# nginx_pid, and returns once it accepts connections. The caller kills nginx_pid.
start_loopback_nginx() {
    local folder=$1 www=$2
    nginx_port=""
    for candidate in $(shuf -i 20000-60000 -n 50); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then nginx_port=$candidate; break; fi
    done
    [ -n "$nginx_port" ] || { echo "FAIL: no free port for nginx" >&2; return 1; }
    mkdir -p "$folder/logs" "$folder/tmp"
    cat > "$folder/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $folder/nginx.pid;
error_log $folder/logs/error.log;
events { worker_connections 64; }
http {
    access_log $folder/logs/access.log;
    client_body_temp_path $folder/tmp; proxy_temp_path $folder/tmp; fastcgi_temp_path $folder/tmp;
    uwsgi_temp_path $folder/tmp; scgi_temp_path $folder/tmp;
    server { listen 127.0.0.1:$nginx_port; root $www; }
}
NGINX
    nginx -c "$folder/nginx.conf" -p "$folder" </dev/null >/dev/null 2>&1 &
    nginx_pid=$!
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$nginx_port") 2>/dev/null && return 0; sleep 0.05; done
    echo "FAIL: nginx did not start on port $nginx_port" >&2
    return 1
}
