package org.acemq.amqp.benchmarks.e2e;

import com.zaxxer.hikari.HikariDataSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import org.acemq.amqp.testsupport.MariaDbProvider;
import org.acemq.amqp.testsupport.MariaDbServer;

/**
 * The MariaDB the MariaDB rows run against: a private, durable {@code mariadbd} from the Debian package
 * {@code mariadb-server}, started by test-support's {@link MariaDbProvider#startPrivate} with the server's durable
 * defaults ({@code innodb_flush_log_at_trx_commit=1}, doublewrite on) and the binary log off (a server without
 * replicas; with it on, {@code sync_binlog=1} would add a second synced log per group commit), or the server named by
 * {@code --mariadb-url}. The report prints the settings read back from the server.
 */
final class BenchMariaDb implements BenchEnv.StoreServer, AutoCloseable {

    /** The database the rows' tables go in. */
    static final String DATABASE = "acemq_bench";

    private final MariaDbServer server;
    private final String url;
    private final String user;
    private final String password;
    private final HikariDataSource monitor;
    private final String description;

    private BenchMariaDb(MariaDbServer server, String url, String user, String password) throws SQLException {
        this.server = server;
        this.url = url;
        this.user = user;
        this.password = password;
        this.monitor = pool(1, "mariadb-monitor");
        try (Connection c = monitor.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT @@version, @@innodb_flush_log_at_trx_commit, @@log_bin,"
                     + " @@sync_binlog, @@innodb_doublewrite, @@innodb_flush_method, @@innodb_buffer_pool_size,"
                     + " @@datadir, @@tx_isolation")) {
            rs.next();
            Path data = Path.of(rs.getString(8));
            description = "MariaDB " + rs.getString(1) + (server != null && server.pid() > 0
                    ? " (private mariadbd, Debian package mariadb-server)" : " (" + url + ")")
                    + ": innodb_flush_log_at_trx_commit=" + rs.getString(2) + ", log_bin=" + (rs.getInt(3) == 1
                    ? "ON, sync_binlog=" + rs.getString(4) : "OFF (sync_binlog=" + rs.getString(4) + " unused)")
                    + ", innodb_doublewrite=" + rs.getString(5) + ", innodb_flush_method=" + rs.getString(6)
                    + ", innodb_buffer_pool_size=" + rs.getLong(7) / (1024 * 1024) + "M, isolation "
                    + rs.getString(9) + ", data directory on "
                    + (Files.isDirectory(data) ? BenchEnv.fileSystem(data) : "another machine")
                    + (pid() > 0 ? "" : "; server CPU not measurable (its process is not visible here)");
        } catch (SQLException | RuntimeException e) {
            monitor.close();
            throw e;
        }
    }

    /**
     * @param url a jdbc:mariadb: URL of an existing server (its database {@value #DATABASE} is created), or null to
     *     start a private durable one
     * @param dataParent where a private server's directory goes (a real disk)
     * @return the server
     */
    static BenchMariaDb open(String url, String user, String password, Path dataParent) throws SQLException {
        if (url != null) {
            MariaDbServer external = null;
            try (Connection c = java.sql.DriverManager.getConnection(url, user, password);
                 Statement s = c.createStatement()) {
                s.execute("CREATE DATABASE IF NOT EXISTS " + DATABASE);
            }
            return new BenchMariaDb(external, withDatabase(url), user, password);
        }
        // the server's defaults are the durable ones; only the buffer pool is set, to PostgreSQL's shared_buffers
        MariaDbServer server = MariaDbProvider.startPrivate(System.getenv(), dataParent,
                List.of("--innodb-flush-log-at-trx-commit=1", "--innodb-buffer-pool-size=256M"));
        try {
            server.execute("CREATE DATABASE " + DATABASE + " CHARACTER SET utf8mb4");
            return new BenchMariaDb(server, server.jdbcUrl(DATABASE), server.user(), server.password());
        } catch (SQLException | RuntimeException e) {
            server.stop();
            throw e;
        }
    }

    private static String withDatabase(String url) {
        int q = url.indexOf('?');
        String base = q < 0 ? url : url.substring(0, q);
        String params = q < 0 ? "" : url.substring(q);
        int slash = base.indexOf('/', base.indexOf("//") + 2);
        return (slash < 0 ? base : base.substring(0, slash)) + "/" + DATABASE + params;
    }

    private long pid() {
        return server == null ? -1 : server.pid();
    }

    String description() {
        return description;
    }

    @Override
    public long serverCpuNanos() {
        return pid() > 0 ? BenchEnv.treeCpuNanos(pid()) : -1;
    }

    /**
     * @return the server's {@code Handler_commit} (commit calls into the storage engine, at the end of every statement
     *     as well as of every transaction: about the statements run) and {@code Innodb_log_writes} (writes to the redo log, each
     *     a durable write at {@code innodb_flush_log_at_trx_commit=1}; group commit makes one write serve several
     *     transactions) so far; global and current (no reporting delay, unlike PostgreSQL's statistics).
     *     {@code Innodb_os_log_fsyncs} is not used: it stays at 0 here, as this server writes its redo log
     *     unbuffered ({@code O_DIRECT}) instead of calling fsync after each write.
     */
    long[] counters() throws SQLException {
        long commits = -1;
        long logWrites = -1;
        try (Connection c = monitor.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW GLOBAL STATUS WHERE Variable_name IN ('Handler_commit',"
                     + " 'Innodb_log_writes')")) {
            while (rs.next()) {
                if (rs.getString(1).equalsIgnoreCase("Handler_commit")) {
                    commits = rs.getLong(2);
                } else {
                    logWrites = rs.getLong(2);
                }
            }
        }
        return new long[] {commits, logWrites};
    }

    void execute(String sql) throws SQLException {
        try (Connection c = monitor.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    HikariDataSource pool(int size, String name) {
        return BenchEnv.pool(url, user, password, size, name);
    }

    String url() {
        return url;
    }

    String user() {
        return user;
    }

    String password() {
        return password;
    }

    @Override
    public void close() {
        monitor.close();
        if (server != null) {
            server.stop();
        }
    }
}
