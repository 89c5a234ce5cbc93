package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.security.auth.Subject;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.activemq.artemis.api.core.ActiveMQException;
import org.apache.activemq.artemis.api.core.ActiveMQExceptionType;
import org.apache.activemq.artemis.core.security.CheckType;
import org.apache.activemq.artemis.core.security.Role;
import org.apache.activemq.artemis.spi.core.protocol.RemotingConnection;
import org.apache.activemq.artemis.spi.core.security.ActiveMQSecurityManager5;
import org.apache.activemq.artemis.spi.core.security.jaas.RolePrincipal;
import org.apache.activemq.artemis.spi.core.security.jaas.UserPrincipal;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A token credential against an embedded Artemis whose security manager is the test's own {@link TokenBroker}: it
 * accepts, as the SASL PLAIN password, only tokens it issued and that have not expired (as RabbitMQ's OAuth 2 plugin
 * does), and, like RabbitMQ, closes a connection when the token it was opened with expires. The consumer renews its
 * connection with a new token before that, and reconnects with a new token after a lost connection, losing no message.
 */
@Timeout(180)
class TokenCredentialIT {

    static TokenBroker security;
    static EmbeddedArtemis broker;
    static AmqpTestClient client;
    StandardErrorTee log;

    @BeforeAll
    static void startBroker() {
        security = new TokenBroker();
        broker = EmbeddedArtemis.builder().securityManager(security).build().start();
        client = AmqpTestClient.connect(broker.host(), broker.port(), "producer",
                security.issue(Duration.ofHours(1)).value());
    }

    @AfterAll
    static void stopBroker() {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
        security.close();
    }

    @BeforeEach
    void captureLog() {
        log = new StandardErrorTee();
    }

    @AfterEach
    void noTokenLogged() {
        log.close();
        for (String token : security.issued.keySet()) {
            assertThat(log.lines(token)).as("log lines with a token").isEmpty();
        }
    }

    static AmqpConsumer.Builder consumer(String name, ConnectionSettings settings, E2e.Effects effects) {
        return AmqpConsumer.builder()
                .name(name)
                .connection(settings)
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder("token-" + name, e -> effects.record(e.id())).build());
    }

    static ConnectionSettings.Builder settings(TokenCredential credential) {
        return ConnectionSettings.builder(broker.host(), broker.port())
                .tokenCredential("app", credential)
                .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(500));
    }

    /** Sends {@code batches} batches of 10 messages, one batch every 100 ms, on another thread. */
    static ScheduledExecutorService sendOver(String queue, int batches) {
        ScheduledExecutorService sender = Executors.newSingleThreadScheduledExecutor();
        AtomicInteger batch = new AtomicInteger();
        sender.scheduleAtFixedRate(() -> {
            int b = batch.getAndIncrement();
            if (b < batches) {
                client.sendBatch(queue, 10, i -> queue + "-" + b + "-" + i);
            }
        }, 0, 100, TimeUnit.MILLISECONDS);
        return sender;
    }

    @Test
    void aConnectionIsRenewedWithANewTokenBeforeItsTokenExpiresAndNoMessageIsLost() {
        TokenBroker.Session watch = security.watch();
        E2e.Effects effects = new E2e.Effects();
        TokenCredential credential = () -> security.issue(Duration.ofSeconds(3));
        ScheduledExecutorService sender = null;
        try (AmqpConsumer c = consumer("renewed", settings(credential).tokenRefreshBefore(Duration.ofSeconds(1))
                .build(), effects).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> c.health().healthy());
            sender = sendOver("token-renewed", 80);
            await().atMost(Duration.ofSeconds(60)).until(() -> effects.total() == 800
                    && broker.messageCount("token-renewed") == 0 && c.health().healthy());
        } finally {
            if (sender != null) {
                sender.shutdownNow();
            }
        }
        assertThat(effects.repeated()).as("no handler ran twice").isEmpty();
        assertThat(watch.accepted()).as("a new token for every connection").hasSizeGreaterThanOrEqualTo(3);
        assertThat(watch.refused()).as("no expired token was ever offered").isEmpty();
        assertThat(watch.closedAtExpiry()).as("renewed before the broker had to close it").isZero();
        assertThat(log.lines("'renewed' renews its connection")).hasSizeGreaterThanOrEqualTo(2);
    }

    /**
     * A token that expires while the broker keeps the connection (the credential does not say when it expires, so
     * the consumer cannot renew ahead): when the connection drops, the consumer reconnects with a new token, never
     * with the expired one, and consumes what was sent meanwhile.
     */
    @Test
    void aLostConnectionIsReopenedWithANewTokenNotTheExpiredOne() {
        TokenBroker.Session watch = security.watch();
        E2e.Effects effects = new E2e.Effects();
        TokenCredential credential = () -> AccessToken.withoutExpiry(
                security.issue(Duration.ofSeconds(2), false).value());
        try (AmqpConsumer c = consumer("reopened", settings(credential).build(), effects).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> c.health().healthy());
            client.sendBatch("token-reopened", 10, i -> "before-" + i);
            await().atMost(Duration.ofSeconds(30)).until(() -> effects.total() == 10);
            String first = watch.accepted().get(0);
            await().atMost(Duration.ofSeconds(10)).until(() -> security.expired(first));

            broker.dropAllConnections(); // the producer's too: it reconnects below
            client.close();
            client = AmqpTestClient.connect(broker.host(), broker.port(), "producer",
                    security.issue(Duration.ofHours(1)).value());
            client.sendBatch("token-reopened", 10, i -> "after-" + i);
            await().atMost(Duration.ofSeconds(30)).until(() -> effects.total() == 20
                    && broker.messageCount("token-reopened") == 0 && c.health().healthy());
        }
        assertThat(effects.repeated()).isEmpty();
        assertThat(watch.refused()).as("the expired token was not offered again").isEmpty();
        assertThat(watch.accepted()).hasSizeGreaterThanOrEqualTo(2);
    }

    /** The control: this broker really refuses an expired token (given as a plain password it is never renewed). */
    @Test
    void theBrokerRefusesAnExpiredTokenAndTheConsumerFailsWithTheReason() {
        String expired = security.issue(Duration.ofMillis(1)).value();
        await().atMost(Duration.ofSeconds(5)).until(() -> security.expired(expired));
        try (AmqpConsumer c = consumer("expired", ConnectionSettings.builder(broker.host(), broker.port())
                .credentials("app", expired).build(), new E2e.Effects()).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> c.health().state() == ConsumerHealth.State.FAILED);
            assertThat(c.health().lastError()).contains("authentication refused by the broker")
                    .doesNotContain(expired);
        }
        assertThat(log.lines("'expired' gives up connecting")).singleElement()
                .satisfies(l -> assertThat(l).contains("after 1 attempt(s)"));
    }

    @Test
    void aCredentialThatFailsIsRetriedLikeABrokerThatIsDown() {
        AtomicInteger calls = new AtomicInteger();
        TokenCredential flaky = () -> {
            if (calls.incrementAndGet() <= 2) {
                throw new IllegalStateException("identity provider unavailable");
            }
            return security.issue(Duration.ofMinutes(5));
        };
        E2e.Effects effects = new E2e.Effects();
        try (AmqpConsumer c = consumer("flaky", settings(flaky).build(), effects).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> c.health().healthy());
        }
        assertThat(log.lines("'flaky' cannot connect")).hasSize(2)
                .allMatch(l -> l.contains("the token credential failed") && l.contains("identity provider unavailable"));

        Throwable failure = catchThrowable(() -> consumer("flaky-ff", settings(() -> {
            throw new IllegalStateException("identity provider unavailable");
        }).build(), new E2e.Effects()).failFastStart(true).start());
        assertThat(failure).isInstanceOf(AcemqException.class).hasMessageContaining("identity provider unavailable");
    }

    @Test
    void tokensNeverAppearInToStrings() {
        AccessToken token = security.issue(Duration.ofMinutes(1));
        assertThat(token.toString()).doesNotContain(token.value()).contains("expiresAt");
        assertThat(settings(() -> token).build().toString()).doesNotContain(token.value()).contains("token=");
    }

    /**
     * The broker's security: tokens it issued are accepted as the SASL PLAIN password until they expire; a connection
     * is closed when its token expires (if the token was issued so). Records what it saw.
     */
    static final class TokenBroker implements ActiveMQSecurityManager5, AutoCloseable {
        final Map<String, Instant> issued = new ConcurrentHashMap<>();
        final Set<String> closesAtExpiry = ConcurrentHashMap.newKeySet();
        final List<String> accepted = new CopyOnWriteArrayList<>();
        final List<String> refused = new CopyOnWriteArrayList<>();
        final AtomicInteger closedAtExpiry = new AtomicInteger();
        final AtomicInteger counter = new AtomicInteger();
        final ScheduledExecutorService closer = Executors.newSingleThreadScheduledExecutor();

        AccessToken issue(Duration lifetime) {
            return issue(lifetime, true);
        }

        AccessToken issue(Duration lifetime, boolean closeAtExpiry) {
            String token = "tok-" + counter.incrementAndGet() + "-" + Long.toHexString(System.nanoTime());
            Instant expires = Instant.now().plus(lifetime);
            issued.put(token, expires);
            if (closeAtExpiry) {
                closesAtExpiry.add(token);
            }
            return AccessToken.of(token, expires);
        }

        boolean expired(String token) {
            return !Instant.now().isBefore(issued.get(token));
        }

        /** @return a view of what happens from now on */
        Session watch() {
            return new Session(accepted.size(), refused.size(), closedAtExpiry.get());
        }

        final class Session {
            final int acceptedFrom;
            final int refusedFrom;
            final int closedFrom;

            Session(int acceptedFrom, int refusedFrom, int closedFrom) {
                this.acceptedFrom = acceptedFrom;
                this.refusedFrom = refusedFrom;
                this.closedFrom = closedFrom;
            }

            /** @return the tokens accepted, each once, in order (the broker checks a token per session, too) */
            List<String> accepted() {
                return accepted.subList(acceptedFrom, accepted.size()).stream().distinct().toList();
            }

            List<String> refused() {
                return refused.subList(refusedFrom, refused.size());
            }

            int closedAtExpiry() {
                return closedAtExpiry.get() - closedFrom;
            }
        }

        @Override
        public Subject authenticate(String user, String password, RemotingConnection connection,
                                    String securityDomain) {
            Instant expires = password == null ? null : issued.get(password);
            if (expires == null || !Instant.now().isBefore(expires)) {
                refused.add(String.valueOf(password));
                return null;
            }
            if (!"producer".equals(user)) {
                accepted.add(password);
            }
            if (connection != null && closesAtExpiry.contains(password)) {
                closer.schedule(() -> {
                    if (!connection.isDestroyed()) {
                        closedAtExpiry.incrementAndGet();
                        connection.fail(new ActiveMQException(ActiveMQExceptionType.SECURITY_EXCEPTION,
                                "token expired"));
                    }
                }, Math.max(0, Duration.between(Instant.now(), expires).toMillis()), TimeUnit.MILLISECONDS);
            }
            Subject subject = new Subject();
            subject.getPrincipals().add(new UserPrincipal(user));
            subject.getPrincipals().add(new RolePrincipal("acemq"));
            return subject;
        }

        @Override
        public boolean authorize(Subject subject, Set<Role> roles, CheckType checkType, String address) {
            return true;
        }

        @Override
        public boolean validateUser(String user, String password) {
            return false;
        }

        @Override
        public boolean validateUserAndRole(String user, String password, Set<Role> roles, CheckType checkType) {
            return false;
        }

        @Override
        public void close() {
            closer.shutdownNow();
        }
    }
}
