package org.acemq.amqp.benchmarks.store;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.acemq.amqp.testsupport.PostgresProvider;
import org.acemq.amqp.testsupport.PostgresSchema;
import org.acemq.amqp.testsupport.PostgresServer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * One message through {@link JdbcIdempotencyStore}: {@code acquire} (tryClaim with attempt number) of a new random
 * UUID id, then {@code confirm(claim)}; two autocommit statements, two commits, unless group commit (param
 * {@link #groupCommit}, on and off by default) coalesces the calls of concurrent threads into shared statements. The
 * score is messages per second.
 *
 * <p>Which PostgreSQL: whatever {@link PostgresProvider} finds. For honest durable numbers point
 * {@code ACEMQ_TEST_JDBC_URL} at a server with {@code fsync=on}; the embedded fallback runs with {@code fsync=off}
 * and measures CPU, not durability. The session runs with {@code synchronous_commit} as {@link #synchronousCommit}
 * (default {@code on}). The table is pre-loaded with {@link #preloadRows} confirmed ids, then vacuumed and
 * checkpointed, so the indexes have a realistic depth.
 *
 * <pre>
 * mvn -o -q -pl tooling/benchmarks -am package -DskipTests
 * ACEMQ_TEST_JDBC_URL=jdbc:postgresql://127.0.0.1:55481/postgres ACEMQ_TEST_JDBC_USER=postgres \
 *   java -cp tooling/benchmarks/target/classes:$(cat tooling/benchmarks/target/classpath.txt) \
 *   org.acemq.amqp.benchmarks.store.JdbcStoreBenchmark            # 1, 4, 16, 64 threads x group commit on/off
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
public class JdbcStoreBenchmark {

    /** Connections in the store's HikariCP pool; about twice the database's cores is best. */
    @Param("4")
    public int poolSize;

    /** Confirmed ids in the table before measuring. */
    @Param("1000000")
    public int preloadRows;

    /** The session's synchronous_commit: on (durable, the default) or off. */
    @Param("on")
    public String synchronousCommit;

    /** The store's group commit: {@code on} (the default: max batch 128) or {@code off}. */
    @Param({"on", "off"})
    public String groupCommit;

    /** With group commit on: the most batch statements in flight at once (the store's default is 2). */
    @Param("2")
    public int groupCommitInFlight;

    private PostgresSchema schema;
    private HikariDataSource pool;
    private JdbcIdempotencyStore store;

    /** Creates a schema of its own, the table, and the pre-loaded rows. */
    @Setup(Level.Trial)
    public void setUp() throws SQLException {
        if (!synchronousCommit.equals("on") && !synchronousCommit.equals("off")) {
            throw new IllegalArgumentException("synchronousCommit must be on or off, but was " + synchronousCommit);
        }
        PostgresServer server = PostgresProvider.shared();
        schema = server.newSchema("jdbc_store_benchmark");
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(schema.jdbcUrl());
        config.setUsername(schema.user());
        config.setPassword(schema.password());
        config.setMaximumPoolSize(poolSize);
        config.setMinimumIdle(poolSize);
        config.setConnectionInitSql("SET synchronous_commit = " + synchronousCommit);
        config.setPoolName("jdbc-store-benchmark");
        pool = new HikariDataSource(config);
        if (!groupCommit.equals("on") && !groupCommit.equals("off")) {
            throw new IllegalArgumentException("groupCommit must be on or off, but was " + groupCommit);
        }
        JdbcIdempotencyStore.Builder builder = JdbcIdempotencyStore.builder(pool)
                .tableName(schema.qualify("acemq_idempotency"));
        builder = groupCommit.equals("on")
                ? builder.groupCommit(JdbcIdempotencyStore.DEFAULT_GROUP_COMMIT_MAX_BATCH, groupCommitInFlight)
                : builder.groupCommit(false);
        store = builder.build();
        store.createSchema();
        try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
            s.execute("INSERT INTO " + store.tableName() + " (lease_until, expires_at, owner, attempts, state, id) "
                    + "SELECT NULL, now() + interval '1 day', NULL, 1, 1, md5(g::text)::uuid::text "
                    + "FROM generate_series(1, " + preloadRows + ") g");
            s.execute("VACUUM ANALYZE " + store.tableName());
            try {
                s.execute("CHECKPOINT");
            } catch (SQLException e) {
                System.err.println("# CHECKPOINT not allowed (" + e.getMessage() + "); continuing");
            }
            try (ResultSet rs = s.executeQuery("SELECT current_setting('server_version') || ', fsync=' "
                    + "|| current_setting('fsync') || ', synchronous_commit=' "
                    + "|| current_setting('synchronous_commit')")) {
                rs.next();
                System.err.println("# PostgreSQL " + rs.getString(1) + " via " + server.source() + " ("
                        + server.jdbcUrl() + "), " + preloadRows + " rows pre-loaded, pool " + poolSize
                        + ", group commit " + groupCommit + (groupCommit.equals("on") ? " (in flight "
                        + groupCommitInFlight + ")" : ""));
            }
        }
    }

    /** Drops the schema. */
    @TearDown(Level.Trial)
    public void tearDown() {
        if (pool != null) {
            pool.close();
        }
        if (schema != null) {
            schema.close();
        }
    }

    /**
     * One message: claim a new id, then confirm it.
     *
     * @return whether the confirm still held the lease (always true here)
     */
    @Benchmark
    public boolean claimAndConfirm() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        String id = new UUID(r.nextLong(), r.nextLong()).toString();
        Claim claim = store.acquire(id);
        return store.confirm(claim);
    }

    /**
     * Runs the benchmark at 1, 4, 16 and 64 threads (unless {@code -t} is given), with group commit on and off
     * (unless {@code -p groupCommit=...} is given), and prints messages per second.
     *
     * @param args JMH command-line options
     * @throws RunnerException if JMH fails
     * @throws CommandLineOptionException if an option is wrong
     */
    public static void main(String[] args) throws RunnerException, CommandLineOptionException {
        CommandLineOptions cli = new CommandLineOptions(args);
        int[] threadCounts = cli.getThreads().hasValue() ? new int[] {cli.getThreads().get()}
                : new int[] {1, 4, 16, 64};
        StringBuilder summary = new StringBuilder();
        for (int threads : threadCounts) {
            ChainedOptionsBuilder options = new OptionsBuilder().parent(cli)
                    .include(JdbcStoreBenchmark.class.getName() + ".claimAndConfirm").threads(threads);
            for (RunResult result : new Runner(options.build()).run()) {
                summary.append(String.format("threads=%d synchronous_commit=%s groupCommit=%s inFlight=%s: "
                        + "%.0f msgs/s (± %.0f)%n", threads, result.getParams().getParam("synchronousCommit"),
                        result.getParams().getParam("groupCommit"), result.getParams().getParam("groupCommitInFlight"),
                        result.getPrimaryResult().getScore(), result.getPrimaryResult().getScoreError()));
            }
        }
        System.out.print(summary);
    }
}
