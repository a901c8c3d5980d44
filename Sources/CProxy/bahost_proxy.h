/* bahost_proxy.h: libproxy, which reads the desktop's proxy settings (GNOME's, KDE's, a PAC file through its
 * pacrunner plugins) and answers, per URL, which proxies to try. Nothing wrapped: Sources/Transfer/DesktopProxies.swift
 * holds every rule. */
#ifndef BAHOST_PROXY_H
#define BAHOST_PROXY_H

#include <proxy.h>

#endif
