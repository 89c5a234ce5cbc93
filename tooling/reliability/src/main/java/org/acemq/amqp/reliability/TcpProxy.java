package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP forwarder in front of PostgreSQL (or a broker), so the harness can make it unreachable for consumers without
 * stopping it: {@link #block()} closes every forwarded connection and refuses new ones (accepted, then closed at
 * once) until {@link #unblock()}; {@link #cut()} closes every forwarded connection and lets new ones in.
 */
final class TcpProxy implements AutoCloseable {

    private final ServerSocket server;
    private final String targetHost;
    private final int targetPort;
    private final String name;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final Set<Socket> clients = ConcurrentHashMap.newKeySet();
    private volatile boolean blocked;
    private volatile boolean closed;

    TcpProxy(int targetPort) throws IOException {
        this("127.0.0.1", targetPort, "pg-proxy");
    }

    TcpProxy(String targetHost, int targetPort, String name) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.name = name;
        this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, name + "-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    void block() {
        blocked = true;
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }

    /** @return how many client connections were closed (new ones are let in) */
    int cut() {
        int n = 0;
        for (Socket s : sockets) {
            if (clients.contains(s)) {
                n++;
            }
            closeQuietly(s);
        }
        return n;
    }

    void unblock() {
        blocked = false;
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                continue;
            }
            if (blocked) {
                closeQuietly(client);
                continue;
            }
            Socket upstream = new Socket();
            try {
                upstream.connect(new InetSocketAddress(targetHost, targetPort), 1000);
                client.setTcpNoDelay(true);
                upstream.setTcpNoDelay(true);
            } catch (IOException e) {
                closeQuietly(client);
                closeQuietly(upstream);
                continue;
            }
            sockets.add(client);
            clients.add(client);
            sockets.add(upstream);
            pump(client, upstream);
            pump(upstream, client);
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[16384];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buf)) >= 0) {
                    out.write(buf, 0, n);
                    out.flush();
                }
            } catch (IOException ignored) {
                // either side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
                sockets.remove(from);
                sockets.remove(to);
                clients.remove(from);
                clients.remove(to);
            }
        }, name + "-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
        }
    }

    @Override
    public void close() {
        closed = true;
        block();
        try {
            server.close();
        } catch (IOException ignored) {
        }
    }
}
