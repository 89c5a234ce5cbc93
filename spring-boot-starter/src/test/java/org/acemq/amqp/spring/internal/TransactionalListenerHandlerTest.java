package org.acemq.amqp.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.Envelope;
import org.acemq.amqp.api.MessageHandler;
import org.acemq.amqp.api.OutboxCapture;
import org.acemq.amqp.api.OutboxEntry;
import org.acemq.amqp.api.OutgoingMessage;
import org.acemq.amqp.store.jdbc.JdbcIdempotencyStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What a database-transaction listener's sends become, on a real (in-process H2) database with Spring's
 * DataSourceTransactionManager: outbox rows in the listener's transaction, announced to the runtime only once that
 * transaction committed, and nothing at all when it did not. The envelope plays the runtime's side of
 * {@link OutboxCapture} and records when it was told what.
 */
@Timeout(60)
class TransactionalListenerHandlerTest {

    private HikariDataSource pool;
    private JdbcIdempotencyStore store;
    private DataSourceTransactionManager transactions;
    private JdbcTemplate jdbc;

    @BeforeEach
    void start() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl("jdbc:h2:mem:tlh_" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000");
        config.setUsername("sa");
        config.setPassword("");
        config.setMaximumPoolSize(4);
        pool = new HikariDataSource(config);
        store = JdbcIdempotencyStore.builder(pool).build();
        store.createSchema();
        jdbc = new JdbcTemplate(pool);
        jdbc.execute("CREATE TABLE effects (id VARCHAR(200) NOT NULL)");
        transactions = new DataSourceTransactionManager(pool);
    }

    @AfterEach
    void stop() {
        jdbc.execute("SHUTDOWN");
        pool.close();
    }

    private MessageHandler handler(MessageHandler listener) {
        return new TransactionalListenerHandler(listener, store, pool, transactions, "test listener");
    }

    /** Writes an effect row and sends two messages. */
    private MessageHandler writesAndSends() {
        return envelope -> {
            jdbc.update("INSERT INTO effects (id) VALUES (?)", envelope.id());
            envelope.send("events", OutgoingMessage.of("created " + envelope.id()));
            envelope.send("audit", OutgoingMessage.of("audited " + envelope.id()));
        };
    }

    private RecordingEnvelope claimed(String id) {
        Claim claim = store.acquire(id);
        assertThat(claim.claimed()).isTrue();
        return new RecordingEnvelope(id, claim.attempt(), pool);
    }

    private int count(String sql) {
        return jdbc.queryForObject(sql, Integer.class);
    }

    @Test
    void theRuntimeIsToldTheSendsAreStoredOnlyOnceTheTransactionCommittedThemWithTheWork() throws Exception {
        RecordingEnvelope envelope = claimed("m1");

        handler(writesAndSends()).handle(envelope);

        assertThat(envelope.stored).isEqualTo(1);
        assertThat(envelope.discarded).isZero();
        assertThat(envelope.committedWhenStored)
                .as("when told, another connection already sees the effect row and both outbox rows")
                .containsExactly(1, 2);
        assertThat(jdbc.queryForList("SELECT message_id FROM \"acemq_outbox\" ORDER BY position", String.class))
                .containsExactly("m1/0", "m1/1");
        assertThat(store.pendingOutbox("m1")).extracting(OutboxEntry::address).containsExactly("events", "audit");
    }

    @Test
    void aTransactionManagerThatNeverSynchronizesStillHasTheSendsAnnouncedAfterItsCommit() throws Exception {
        transactions.setTransactionSynchronization(AbstractPlatformTransactionManager.SYNCHRONIZATION_NEVER);
        RecordingEnvelope envelope = claimed("m2");

        handler(writesAndSends()).handle(envelope);

        assertThat(envelope.stored).isEqualTo(1);
        assertThat(envelope.committedWhenStored).containsExactly(1, 2);
    }

    @Test
    void aListenerThatThrowsLeavesNoRowsAndSendsNothing() throws Exception {
        RecordingEnvelope envelope = claimed("m3");
        IllegalStateException failure = new IllegalStateException("payment provider timed out");

        assertThatThrownBy(() -> handler(e -> {
            writesAndSends().handle(e);
            throw failure;
        }).handle(envelope)).isSameAs(failure);

        assertThat(envelope.stored + envelope.discarded).as("a throw: the runtime sends nothing by itself").isZero();
        assertThat(count("SELECT count(*) FROM effects")).isZero();
        assertThat(count("SELECT count(*) FROM \"acemq_outbox\"")).isZero();
    }

    @Test
    void aTransactionMarkedRollbackOnlyByAParticipantFailsTheMessageWithNothingStored() throws Exception {
        RecordingEnvelope envelope = claimed("m4");
        TransactionTemplate participant = new TransactionTemplate(transactions);

        assertThatThrownBy(() -> handler(e -> {
            writesAndSends().handle(e);
            participant.executeWithoutResult(status -> status.setRollbackOnly()); // caught failure, say
        }).handle(envelope)).isInstanceOf(UnexpectedRollbackException.class);

        assertThat(envelope.stored).as("the outbox rows were rolled back: not announced").isZero();
        assertThat(count("SELECT count(*) FROM effects")).isZero();
        assertThat(count("SELECT count(*) FROM \"acemq_outbox\"")).isZero();
    }

    @Test
    void whenAnotherOwnerConfirmedFirstTheWorkIsRolledBackAndTheSendsDiscarded() throws Exception {
        RecordingEnvelope envelope = claimed("m5");
        JdbcIdempotencyStore other = JdbcIdempotencyStore.builder(pool).build();
        jdbc.update("UPDATE \"acemq_idempotency\" SET lease_until = DATEADD(HOUR, -1, lease_until) "
                + "WHERE id = 'm5'"); // the first claim's lease lapsed (its owner was paused)
        Claim taken = other.acquire("m5");
        assertThat(taken.claimed()).as("the other owner takes the lapsed claim over").isTrue();
        assertThat(other.confirm(taken)).isTrue();

        handler(writesAndSends()).handle(envelope); // returns normally: the message is done, by the other owner

        assertThat(envelope.discarded).isEqualTo(1);
        assertThat(envelope.stored).isZero();
        assertThat(count("SELECT count(*) FROM effects")).isZero();
        assertThat(count("SELECT count(*) FROM \"acemq_outbox\"")).isZero();
    }

    @Test
    void aSendAfterTheOutboxRowsWereWrittenIsRefusedAndTheTransactionRolledBack() throws Exception {
        RecordingEnvelope envelope = claimed("m6");

        assertThatThrownBy(() -> handler(e -> {
            writesAndSends().handle(e);
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void beforeCommit(boolean readOnly) {
                    e.send("late", OutgoingMessage.of("after the rows were written"));
                }
            });
        }).handle(envelope)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("already written to the outbox");

        assertThat(envelope.stored).isZero();
        assertThat(envelope.sent).hasSize(2);
        assertThat(count("SELECT count(*) FROM effects")).isZero();
        assertThat(count("SELECT count(*) FROM \"acemq_outbox\"")).isZero();
    }

    /**
     * The runtime's envelope as far as the outbox goes: sends recorded with stable ids ({@code <id>/<position>}),
     * {@link #outboxStored()} refused if more was sent after the entries were read, and what a connection outside
     * the listener's transaction sees at the moment it is called.
     */
    static final class RecordingEnvelope implements Envelope, OutboxCapture {
        private final String id;
        private final int attempt;
        private final HikariDataSource pool;
        final List<OutboxEntry> sent = new ArrayList<>();
        private int read = -1;
        int stored;
        int discarded;
        List<Integer> committedWhenStored;

        RecordingEnvelope(String id, int attempt, HikariDataSource pool) {
            this.id = id;
            this.attempt = attempt;
            this.pool = pool;
        }

        @Override
        public String send(String address, OutgoingMessage message) {
            int position = sent.size();
            OutboxEntry entry = new OutboxEntry(id, position, id + "/" + position, address,
                    String.valueOf(message.body()).getBytes(StandardCharsets.UTF_8));
            sent.add(entry);
            return entry.messageId();
        }

        @Override
        public List<OutboxEntry> outboxEntries() {
            read = sent.size();
            return List.copyOf(sent);
        }

        @Override
        public void outboxStored() {
            if (read != sent.size()) {
                throw new IllegalStateException("sent more after the entries were read");
            }
            stored++;
            // a connection of its own, not the thread's transaction's (a JdbcTemplate here would join that)
            try (Connection outside = pool.getConnection()) {
                committedWhenStored = List.of(
                        count(outside, "SELECT count(*) FROM effects WHERE id = ?"),
                        count(outside, "SELECT count(*) FROM \"acemq_outbox\" WHERE incoming_key = ?"));
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }

        private int count(Connection connection, String sql) throws SQLException {
            try (PreparedStatement ps = connection.prepareStatement(sql)) {
                ps.setString(1, id);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getInt(1);
                }
            }
        }

        @Override
        public void outboxDiscarded() {
            discarded++;
        }

        @Override
        public String id() {
            return id;
        }

        @Override
        public Object messageId() {
            return id;
        }

        @Override
        public String address() {
            return "orders";
        }

        @Override
        public Object body() {
            return id;
        }

        @Override
        public <T> T body(Class<T> type) {
            return type.cast(id);
        }

        @Override
        public Object correlationId() {
            return null;
        }

        @Override
        public String subject() {
            return null;
        }

        @Override
        public String contentType() {
            return null;
        }

        @Override
        public String replyTo() {
            return null;
        }

        @Override
        public Instant creationTime() {
            return null;
        }

        @Override
        public Map<String, Object> applicationProperties() {
            return Map.of();
        }

        @Override
        public Map<String, Object> annotations() {
            return Map.of();
        }

        @Override
        public long deliveryCount() {
            return 0;
        }

        @Override
        public boolean firstAcquirer() {
            return true;
        }

        @Override
        public int attempt() {
            return attempt;
        }
    }
}
