package org.acemq.amqp.reliability;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

import javax.sql.DataSource;

/**
 * The harness's own tables, next to the idempotency store's table in one PostgreSQL schema (or MariaDB database).
 *
 * <ul>
 *   <li>{@code harness_effects}: one row per handler run that did its work (separate mode: an autocommit insert;
 *       transactional mode: committed together with the store's confirm). This is the "side effect" the checker
 *       counts.</li>
 *   <li>{@code harness_confirms}: what the store answered to every {@code confirm(Claim)} (held = the claim still
 *       held its lease), written by {@link CrashPointStore} right after the confirm returned.</li>
 *   <li>{@code harness_crashes}: the deterministic crash points that fired. The insert happens just before the
 *       process halts; the primary key makes every crash point fire exactly once per message across all consumer
 *       processes and restarts.</li>
 *   <li>{@code harness_rejections}: messages a consumer settled as rejected, with the runtime's reason.</li>
 * </ul>
 */
final class HarnessDb {

    static final String SCHEMA = "reliability";
    static final String STORE_TABLE = SCHEMA + ".acemq_idempotency";

    private HarnessDb() {
    }

    static List<String> ddl() {
        return List.of(
                "DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE",
                "CREATE SCHEMA " + SCHEMA,
                "CREATE TABLE " + SCHEMA + ".harness_effects (seq bigserial PRIMARY KEY, msg_key text NOT NULL,"
                        + " consumer text NOT NULL, attempt int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())",
                "CREATE INDEX harness_effects_key ON " + SCHEMA + ".harness_effects (msg_key)",
                "CREATE TABLE " + SCHEMA + ".harness_confirms (msg_key text NOT NULL, attempt int NOT NULL,"
                        + " consumer text NOT NULL, held boolean NOT NULL,"
                        + " at timestamptz NOT NULL DEFAULT clock_timestamp(), PRIMARY KEY (msg_key, attempt))",
                "CREATE TABLE " + SCHEMA + ".harness_crashes (msg_key text NOT NULL, point text NOT NULL,"
                        + " consumer text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(),"
                        + " PRIMARY KEY (msg_key, point))",
                "CREATE TABLE " + SCHEMA + ".harness_rejections (msg_key text NOT NULL, reason text NOT NULL,"
                        + " consumer text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(),"
                        + " PRIMARY KEY (msg_key, reason))");
    }

    /** The same tables on MariaDB: a database named like the PostgreSQL schema. */
    static List<String> mariaDbDdl() {
        String key = "VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL";
        String at = "at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)";
        return List.of(
                "DROP DATABASE IF EXISTS " + SCHEMA,
                "CREATE DATABASE " + SCHEMA + " CHARACTER SET utf8mb4",
                "CREATE TABLE " + SCHEMA + ".harness_effects (seq BIGINT AUTO_INCREMENT PRIMARY KEY, msg_key " + key
                        + ", consumer VARCHAR(100) NOT NULL, attempt INT NOT NULL, " + at
                        + ", KEY harness_effects_key (msg_key)) ENGINE = InnoDB",
                "CREATE TABLE " + SCHEMA + ".harness_confirms (msg_key " + key + ", attempt INT NOT NULL,"
                        + " consumer VARCHAR(100) NOT NULL, held BOOLEAN NOT NULL, " + at
                        + ", PRIMARY KEY (msg_key, attempt)) ENGINE = InnoDB",
                "CREATE TABLE " + SCHEMA + ".harness_crashes (msg_key " + key + ", point VARCHAR(100) NOT NULL,"
                        + " consumer VARCHAR(100) NOT NULL, " + at + ", PRIMARY KEY (msg_key, point)) ENGINE = InnoDB",
                "CREATE TABLE " + SCHEMA + ".harness_rejections (msg_key " + key + ", reason VARCHAR(200) NOT NULL,"
                        + " consumer VARCHAR(100) NOT NULL, " + at + ", PRIMARY KEY (msg_key, reason))"
                        + " ENGINE = InnoDB");
    }

    private static boolean mariaDb(Connection c) throws SQLException {
        return c.getMetaData().getURL().startsWith("jdbc:mariadb:");
    }

    /** @return an insert that does nothing when the primary key exists, in the connection's dialect */
    private static String insertOnce(Connection c, String table, String columns, String values) throws SQLException {
        return mariaDb(c)
                ? "INSERT IGNORE INTO " + SCHEMA + "." + table + " (" + columns + ") VALUES (" + values + ")"
                : "INSERT INTO " + SCHEMA + "." + table + " (" + columns + ") VALUES (" + values
                        + ") ON CONFLICT DO NOTHING";
    }

    static void createSchema(DataSource ds) throws SQLException {
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            for (String sql : mariaDb(c) ? mariaDbDdl() : ddl()) {
                s.execute(sql);
            }
        }
    }

    static void insertEffect(Connection c, String key, String consumer, int attempt) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + SCHEMA
                + ".harness_effects (msg_key, consumer, attempt) VALUES (?, ?, ?)")) {
            ps.setString(1, key);
            ps.setString(2, consumer);
            ps.setInt(3, attempt);
            ps.executeUpdate();
        }
    }

    /** @return true if this call recorded the crash (so the caller must now crash), false if it had fired before */
    static boolean recordCrash(DataSource ds, String key, String point, String consumer) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                insertOnce(c, "harness_crashes", "msg_key, point, consumer", "?, ?, ?"))) {
            ps.setString(1, key);
            ps.setString(2, point);
            ps.setString(3, consumer);
            return ps.executeUpdate() == 1;
        }
    }

    static void recordConfirm(DataSource ds, String key, int attempt, String consumer, boolean held)
            throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                insertOnce(c, "harness_confirms", "msg_key, attempt, consumer, held", "?, ?, ?, ?"))) {
            ps.setString(1, key);
            ps.setInt(2, attempt);
            ps.setString(3, consumer);
            ps.setBoolean(4, held);
            ps.executeUpdate();
        }
    }

    static void recordRejection(DataSource ds, String key, String reason, String consumer) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                insertOnce(c, "harness_rejections", "msg_key, reason, consumer", "?, ?, ?"))) {
            ps.setString(1, key);
            ps.setString(2, reason);
            ps.setString(3, consumer);
            ps.executeUpdate();
        }
    }
}
