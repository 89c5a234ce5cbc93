package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A MariaDB server the harness can stop and start: {@code mariadbd} of the Debian package {@code mariadb-server}
 * (or the directory {@code ACEMQ_MARIADB_BIN_DIR}), on a data directory made once by {@code mariadb-install-db} and
 * kept between starts, on a fixed loopback port with its own socket. Never the system service. A restart is a clean
 * shutdown (SIGTERM), so nothing committed is lost.
 */
final class ManagedMariaDb implements ManagedDatabase {

    private final Path home;
    private final int port;
    private Process process;

    ManagedMariaDb(Path home, int port) {
        this.home = home;
        this.port = port;
    }

    private static Path program(String name) {
        String dir = System.getenv("ACEMQ_MARIADB_BIN_DIR");
        for (String d : new String[] {dir, "/usr/sbin", "/usr/bin"}) {
            if (d != null && Files.isExecutable(Path.of(d, name))) {
                return Path.of(d, name);
            }
        }
        throw new IllegalStateException(name + " not found: install the Debian package mariadb-server (.ci/run does) "
                + "or set ACEMQ_MARIADB_BIN_DIR");
    }

    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }

    @Override
    public synchronized ManagedMariaDb start() {
        if (process != null) {
            return this;
        }
        try {
            Path data = home.resolve("data");
            if (!Files.isDirectory(data)) {
                Files.createDirectories(home);
                List<String> install = new ArrayList<>(List.of(program("mariadb-install-db").toString(),
                        "--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
                        "--skip-test-db"));
                if (root()) {
                    install.add("--user=root");
                }
                Process setup = new ProcessBuilder(install).redirectErrorStream(true)
                        .redirectOutput(home.resolve("install.log").toFile()).start();
                if (!setup.waitFor(120, TimeUnit.SECONDS) || setup.exitValue() != 0) {
                    setup.destroyForcibly();
                    throw new IllegalStateException("mariadb-install-db failed, see " + home.resolve("install.log"));
                }
            }
            List<String> command = new ArrayList<>(List.of(program("mariadbd").toString(), "--no-defaults",
                    "--datadir=" + data, "--socket=" + home.resolve("mariadbd.sock"), "--port=" + port,
                    "--bind-address=127.0.0.1", "--pid-file=" + home.resolve("mariadbd.pid"),
                    "--log-error=" + home.resolve("mariadbd.log"), "--max-connections=400",
                    "--innodb-buffer-pool-size=128M", "--skip-log-bin"));
            if (root()) {
                command.add("--user=root");
            }
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(home.resolve("stdout.log").toFile())).start();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("mariadbd exited with " + process.exitValue() + ", see "
                            + home.resolve("mariadbd.log"));
                }
                try (Connection c = DriverManager.getConnection(jdbcUrl(port) + "?connectTimeout=1000", user(), "")) {
                    return this;
                } catch (SQLException e) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("mariadbd did not accept connections on " + port, e);
                    }
                    process.waitFor(100, TimeUnit.MILLISECONDS); // starting: check again shortly
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("MariaDB did not start on port " + port, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while MariaDB started", e);
        }
    }

    @Override
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        try {
            process.destroy(); // SIGTERM: a clean shutdown
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            process = null;
        }
    }

    @Override
    public int port() {
        return port;
    }

    @Override
    public String jdbcUrl(int port) {
        return "jdbc:mariadb://127.0.0.1:" + port + "/";
    }

    @Override
    public String user() {
        return "root";
    }

    @Override
    public String product() {
        return "MariaDB";
    }

    @Override
    public void close() {
        stop();
    }
}
