package org.acemq.amqp.store.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;

/**
 * H2 2.x, for tests. The claim upsert is {@code MERGE INTO … USING … WHEN MATCHED AND <claimable> THEN UPDATE … WHEN
 * NOT MATCHED THEN INSERT}. H2 does not make a concurrent insert of the same id wait and update: the second one fails
 * with a duplicate key (23505), and the store runs the statement again. {@code CURRENT_TIMESTAMP} is the start of the
 * transaction in H2, not of the statement: in a long transaction of the caller's ({@code JdbcTransactionalHandler}) the
 * lease is judged at the transaction's start.
 *
 * <p>Refused key: SQLState class 22 (22001, value too long). Retried: 40001 (deadlock).
 */
final class H2Dialect extends LockingDialect {

    private final String acquire;

    H2Dialect(TableName table, Duration lease, Duration retention) {
        super(table, '"', lease, retention, "/org/acemq/amqp/store/jdbc/h2.sql");
        String now = now();
        this.acquire = "MERGE INTO " + t + " t USING (SELECT CAST(? AS VARCHAR(512)) AS id, CAST(? AS UUID) AS owner,"
                + " CAST(? AS VARCHAR(128)) AS fp, CAST(? AS BINARY(16)) AS token) s ON t.id = s.id\n"
                + "WHEN MATCHED AND " + claimable().replace("state", "t.state").replace("expires_at", "t.expires_at")
                        .replace("lease_until", "t.lease_until") + " THEN UPDATE SET\n"
                + "  state = 0, owner = s.owner,\n"
                + "  attempts = CASE WHEN t.expires_at <= " + now + " THEN 1 ELSE t.attempts + 1 END,\n"
                + "  lease_until = " + plus(lease) + ", expires_at = " + plus(lease.plus(retention)) + ",\n"
                + "  fingerprint = s.fp, claim_token = s.token\n"
                + "WHEN NOT MATCHED THEN INSERT (id, state, owner, attempts, lease_until, expires_at, fingerprint,"
                + " claim_token)\n"
                + "  VALUES (s.id, 0, s.owner, 1, " + plus(lease) + ", " + plus(lease.plus(retention))
                + ", s.fp, s.token)";
    }

    @Override
    public String name() {
        return "H2";
    }

    @Override
    String now() {
        return "CURRENT_TIMESTAMP";
    }

    @Override
    String plus(Duration d) {
        return "DATEADD(MILLISECOND, " + d.toMillis() + ", CURRENT_TIMESTAMP)";
    }

    @Override
    String backslashLiteral() {
        return "'\\'";
    }

    @Override
    String acquireUpsert() {
        return acquire;
    }

    @Override
    String confirmUpsert(String retained) {
        return "MERGE INTO " + t + " t USING (SELECT CAST(? AS VARCHAR(512)) AS id, CAST(? AS INTEGER) AS attempts) s"
                + " ON t.id = s.id\n"
                + "WHEN MATCHED THEN UPDATE SET\n"
                + "  attempts = CASE WHEN t.expires_at <= " + now() + " THEN s.attempts ELSE t.attempts END,\n"
                + "  fingerprint = CASE WHEN t.expires_at <= " + now() + " THEN NULL ELSE t.fingerprint END,\n"
                + "  state = 1, owner = NULL, lease_until = NULL, expires_at = " + retained + "\n"
                + "WHEN NOT MATCHED THEN INSERT (id, state, owner, attempts, lease_until, expires_at)\n"
                + "  VALUES (s.id, 1, NULL, s.attempts, NULL, " + retained + ")";
    }

    @Override
    String purgeSql() {
        return "DELETE FROM " + t + " WHERE expires_at <= " + now() + " FETCH FIRST ? ROWS ONLY";
    }

    @Override
    void setOwner(PreparedStatement ps, int index, UUID owner) throws SQLException {
        ps.setObject(index, owner);
    }

    @Override
    OffsetDateTime timestamp(ResultSet rs, int index) throws SQLException {
        return rs.getObject(index, OffsetDateTime.class);
    }

    @Override
    boolean isDuplicateKey(SQLException e) {
        return "23505".equals(e.getSQLState());
    }

    @Override
    public void createSchema(Connection c) throws SQLException {
        try (Statement s = c.createStatement()) {
            for (String statement : ddl()) {
                s.execute(statement);
            }
        }
    }

    @Override
    public boolean isRefusedKey(SQLException e) {
        return e.getSQLState() != null && e.getSQLState().startsWith("22");
    }

    @Override
    public boolean isRetryable(SQLException e) {
        return "40001".equals(e.getSQLState());
    }
}
