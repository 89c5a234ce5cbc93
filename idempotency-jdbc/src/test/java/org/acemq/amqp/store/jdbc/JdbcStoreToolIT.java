package org.acemq.amqp.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.api.MessageIds;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator's re-drive support on real PostgreSQL: {@code resetAttempts}, the documented SQL, and the command-line
 * tool {@link JdbcStoreTool} (in this JVM and as a real {@code java -cp … JdbcStoreTool} process).
 */
@Timeout(120)
class JdbcStoreToolIT {

    static PgFixture db;
    JdbcIdempotencyStore store;
    JdbcIdempotencyStore other;

    @BeforeAll
    static void startDatabase() {
        db = new PgFixture(JdbcStoreToolIT.class);
    }

    @AfterAll
    static void dropDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @BeforeEach
    void fresh() {
        db.truncate();
        store = db.store(Duration.ofMinutes(5), Duration.ofHours(1));
        other = db.store(Duration.ofMinutes(5), Duration.ofHours(1));
        for (int i = 0; i < 3; i++) { // a poison message: claimed and released maxAttempts times
            assertThat(store.release(store.acquire("s:poison-1"))).isTrue();
        }
        store.confirm(store.acquire("s:done"));
        assertThat(other.acquire("s:busy").claimed()).isTrue();
    }

    record Run(int status, String out, String err) {
    }

    Run tool(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = new JdbcStoreTool(new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), env::get).run(args);
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    List<String> connect(String command) {
        List<String> args = new ArrayList<>(List.of(command, "--url", db.schema.jdbcUrl(), "--table", db.table));
        if (db.schema.user() != null) {
            args.addAll(List.of("--user", db.schema.user()));
        }
        if (db.schema.password() != null) {
            args.addAll(List.of("--password-env", "ACEMQ_TOOL_TEST_PASSWORD"));
        }
        return args;
    }

    Map<String, String> env() {
        return db.schema.password() == null ? Map.of() : Map.of("ACEMQ_TOOL_TEST_PASSWORD", db.schema.password());
    }

    @Test
    void resetAttemptsResetsOnlyWhatMayBeRetriedAndSaysWhyNot() {
        List<String> args = connect("reset-attempts");
        args.addAll(List.of("s:poison-1", "s:done", "s:busy", "s:unknown"));
        Run run = tool(env(), args.toArray(String[]::new));

        assertThat(run.status()).as(run.err()).isEqualTo(JdbcStoreTool.NOT_RESET);
        assertThat(run.out()).contains("s:poison-1: reset (attempts were 3); its next delivery is attempt 1")
                .contains("s:done: NOT reset: it is confirmed")
                .contains("s:busy: NOT reset: a consumer holds a live lease")
                .contains("s:unknown: NOT reset: the store knows nothing of this key");
        assertThat(store.acquire("s:poison-1")).isEqualTo(new Claim("s:poison-1", ClaimResult.CLAIMED, 1));
        assertThat(store.tryClaim("s:done")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        assertThat(store.attempts("s:busy")).isEqualTo(1);
        if (db.schema.password() != null && !db.schema.password().isEmpty()) {
            assertThat(run.out() + run.err()).doesNotContain(db.schema.password());
        }
    }

    @Test
    void showPrintsTheStateOfEachKeyAndChangesNothing() {
        List<String> args = connect("show");
        args.addAll(List.of("s:poison-1", "s:done", "s:busy", "s:unknown"));
        Run run = tool(env(), args.toArray(String[]::new));
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.out()).contains("s:poison-1: released, attempts 3, remembered until")
                .contains(", fingerprint none").contains("s:done: confirmed until")
                .contains("s:busy: claimed, lease live until").contains("s:unknown: unknown (no row");
        assertThat(store.attempts("s:poison-1")).isEqualTo(3);
    }

    @Test
    void theDocumentedSqlDoesWhatResetAttemptsDoes() {
        // docs/jdbc-store.md, "Re-driving a dead-lettered message": the statement an operator may run by hand
        String documented = "DELETE FROM acemq_idempotency WHERE id = ? AND expires_at > now()"
                + " AND (state = 2 OR (state = 0 AND lease_until <= now()))";
        String sql = documented.replace("acemq_idempotency", db.table);
        assertThat(db.update(sql, "s:poison-1")).isEqualTo(1);
        assertThat(db.update(sql, "s:done")).isZero();
        assertThat(db.update(sql, "s:busy")).isZero();
        assertThat(store.acquire("s:poison-1").attempt()).isEqualTo(1);
        assertThat(store.tryClaim("s:done")).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
    }

    @Test
    void usageErrorsAreClearAndExitWithTwo() {
        Run none = tool(Map.of());
        assertThat(none.status()).isEqualTo(JdbcStoreTool.USAGE);
        assertThat(none.out()).contains("usage:").contains("reset-attempts");
        assertThat(tool(Map.of(), "--help").status()).isZero();

        Run password = tool(Map.of(), "reset-attempts", "--url", "jdbc:postgresql://h/db", "--password", "hunter2",
                "s:x");
        assertThat(password.status()).isEqualTo(JdbcStoreTool.USAGE);
        assertThat(password.err()).contains("--password is not supported").doesNotContain("hunter2");

        assertThat(tool(Map.of(), "drop-table", "--url", "jdbc:postgresql://h/db", "s:x").err())
                .contains("unknown command 'drop-table'");
        assertThat(tool(Map.of(), "reset-attempts", "s:x").err()).contains("--url is required");
        assertThat(tool(Map.of(), "reset-attempts", "--url", "jdbc:postgresql://h/db").err())
                .contains("no KEY given");
        assertThat(tool(Map.of(), "reset-attempts", "--url", "jdbc:postgresql://h/db", "--password-env", "NOPE", "s:x")
                .err()).contains("environment variable NOPE is not set");
        Run nul = tool(Map.of(), "reset-attempts", "--url", "jdbc:postgresql://h/db", "s:a\u0000b");
        assertThat(nul.status()).isEqualTo(JdbcStoreTool.USAGE);
        assertThat(nul.err()).contains("s:a\\u0000b").doesNotContain("\u0000");
        assertThat(tool(Map.of(), "show", "--url", "jdbc:postgresql://h/db", "--table", "x;drop", "s:x").err())
                .contains("tableName");
    }

    static final String FP = "0123456789abcdef0123456789abcdef";

    /**
     * Keys in scopes that LIKE would confuse if the tool did not escape: a scope that is a prefix of another, one with
     * '_' (any one character in LIKE), one with '%' (any characters; escaped to %25 in the key) and one with '|'.
     */
    void scopedKeys() {
        store.release(store.acquire(MessageIds.scoped("orders", "s:1"), FP));
        store.release(store.acquire(MessageIds.scoped("orders", "s:1")));
        store.confirm(store.acquire(MessageIds.scoped("orders", "s:2"), FP));
        other.acquire(MessageIds.scoped("orders", "s:3"));
        store.confirm(MessageIds.scoped("orders-dlq", "s:1"));
        store.confirm(MessageIds.scoped("order_", "s:1"));
        store.confirm(MessageIds.scoped("ordersX", "s:1"));
        store.confirm(MessageIds.scoped("50%", "s:1"));
        store.confirm(MessageIds.scoped("50%x25", "s:1"));
        store.confirm(MessageIds.scoped("a|b", "s:1"));
        store.confirm(MessageIds.scoped("a", "b|s:1"));
    }

    @Test
    void scopesListsEveryScopeWithItsCounts() {
        scopedKeys();
        Run run = tool(env(), connect("scopes").toArray(String[]::new));
        assertThat(run.status()).as(run.err()).isZero();
        assertThat(run.out()).contains("(keys without a scope): 3 keys: 1 confirmed, 1 in progress, "
                        + "1 released or lapsed, 0 forgotten")
                .contains("scope orders: 3 keys: 1 confirmed, 1 in progress, 1 released or lapsed, 0 forgotten")
                .contains("scope orders-dlq: 1 keys: 1 confirmed").contains("scope order_: 1 keys")
                .contains("scope 50%: 1 keys").contains("scope 50%x25: 1 keys").contains("scope a|b: 1 keys")
                .contains("scope a: 1 keys");
        assertThat(run.out().lines().filter(line -> line.startsWith("scope ") || line.startsWith("(keys"))).hasSize(9);
    }

    @Test
    void keysListsOneScopeOnlyHoweverItIsSpelled() {
        scopedKeys();
        Run orders = tool(env(), with(connect("keys"), "--scope", "orders"));
        assertThat(orders.status()).as(orders.err()).isZero();
        assertThat(orders.out().lines().toList()).hasSize(3);
        assertThat(orders.out()).contains("orders|s:1: released, attempts 2")
                .contains("orders|s:2: confirmed until").contains(", fingerprint " + FP)
                .contains("orders|s:3: claimed, lease live until").contains("fingerprint none");
        assertThat(only(with(connect("keys"), "--scope", "order_"))).containsExactly("order_|s:1");
        assertThat(only(with(connect("keys"), "--scope", "50%"))).containsExactly("50%25|s:1");
        assertThat(only(with(connect("keys"), "--scope", "a|b"))).containsExactly("a%7Cb|s:1");
        assertThat(only(with(connect("keys"), "--scope", "a"))).containsExactly("a|b|s:1");
        assertThat(only(with(connect("keys"), "--scope", "nothing-here"))).isEmpty();
        Run limited = tool(env(), with(connect("keys"), "--scope", "orders", "--limit", "2"));
        assertThat(limited.out()).contains("orders|s:1").contains("orders|s:2").doesNotContain("orders|s:3")
                .contains("first 2 keys");
    }

    /** @return the keys a {@code keys} run printed */
    List<String> only(String[] args) {
        Run run = tool(env(), args);
        assertThat(run.status()).as(run.err()).isZero();
        return run.out().lines().filter(line -> line.contains(": ")).map(line -> line.substring(0, line.indexOf(": ")))
                .filter(key -> !key.startsWith("scope ")).toList();
    }

    static String[] with(List<String> args, String... more) {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of(more));
        return all.toArray(String[]::new);
    }

    @Test
    void showAndResetTakeAScopeAndAKey() {
        scopedKeys();
        Run show = tool(env(), with(connect("show"), "--scope", "orders", "s:1", "s:2"));
        assertThat(show.status()).as(show.err()).isZero();
        assertThat(show.out()).contains("orders|s:1: released, attempts 2").contains("fingerprint none")
                .contains("orders|s:2: confirmed until").contains("fingerprint " + FP);
        Run reset = tool(env(), with(connect("reset-attempts"), "--scope", "orders", "s:1", "s:2"));
        assertThat(reset.status()).isEqualTo(JdbcStoreTool.NOT_RESET);
        assertThat(reset.out()).contains("orders|s:1: reset (attempts were 2)").contains("orders|s:2: NOT reset");
        assertThat(store.attempts(MessageIds.scoped("orders", "s:1"))).isZero();
        assertThat(store.isConfirmed(MessageIds.scoped("orders-dlq", "s:1"))).isTrue();
        assertThat(store.attempts("s:poison-1")).as("the unscoped key of the same name is another key").isEqualTo(3);

        assertThat(tool(env(), with(connect("keys"))).err()).contains("keys needs --scope");
        assertThat(tool(env(), with(connect("keys"), "--scope", "orders", "s:1")).err()).contains("keys takes no KEY");
        assertThat(tool(env(), with(connect("keys"), "--scope", "orders", "--limit", "0")).err())
                .contains("--limit must be");
        assertThat(tool(env(), with(connect("show"), "--scope", " ", "s:1")).status()).isEqualTo(JdbcStoreTool.USAGE);
    }

    @Test
    void anUnreachableDatabaseExitsWithThreeAndPrintsNoSecret() {
        Run run = tool(Map.of("PW", "s3cret-pw"), "reset-attempts", "--url",
                "jdbc:postgresql://127.0.0.1:1/db?password=s3cret-url&connectTimeout=2", "--user", "u",
                "--password-env", "PW", "s:x");
        assertThat(run.status()).isEqualTo(JdbcStoreTool.DATABASE);
        assertThat(run.err()).contains("could not be used").contains("jdbc:postgresql://127.0.0.1:1/db?…")
                .doesNotContain("s3cret");
        assertThat(run.out()).doesNotContain("s3cret");
    }

    @Test
    void theCommandRunsAsARealProcess(@TempDir Path dir) throws IOException, InterruptedException {
        Path keys = dir.resolve("keys.txt");
        Files.writeString(keys, "s:poison-1\n\n");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-cp", System.getProperty("java.class.path"), JdbcStoreTool.class.getName()));
        command.addAll(connect("reset-attempts"));
        command.addAll(List.of("--keys-from", keys.toString()));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        env().forEach(builder.environment()::put);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(output).isZero();
        assertThat(output).contains("s:poison-1: reset (attempts were 3)");
        assertThat(store.attempts("s:poison-1")).isZero();
    }
}
