package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.acemq.amqp.api.AcemqException;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.acemq.amqp.testinfra.tls.TestPki;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * TLS against an embedded Artemis with a TLS acceptor, a mutual-TLS acceptor and one whose certificate names another
 * host, next to its plain one; the certificates are made for the run ({@link TestPki}). A trusted broker and mutual TLS
 * work; a certificate problem (untrusted authority, another host, no client certificate, a wrong store password, a
 * store file that does not exist) leaves a consumer that starts in the background {@code FAILED} after one attempt,
 * with the reason in {@code lastError} and in exactly one log line; {@code failFastStart} throws with the same reason;
 * a broker that is merely not there is retried; TLS and plain never meet half-way; no password is ever logged.
 */
@Timeout(180)
class TlsIT {

    static TestPki pki;
    static EmbeddedArtemis broker;
    static AmqpTestClient client;
    StandardErrorTee log;

    @BeforeAll
    static void startBroker() {
        pki = TestPki.shared();
        String server = "sslEnabled=true;keyStorePath=" + pki.brokerKeyStore() + ";keyStorePassword=" + pki.password()
                + ";keyStoreType=PKCS12";
        broker = EmbeddedArtemis.builder()
                .acceptor("tls", server)
                .acceptor("mtls", server + ";needClientAuth=true;trustStorePath=" + pki.trustStore()
                        + ";trustStorePassword=" + pki.password() + ";trustStoreType=PKCS12")
                .acceptor("wrong-host", "sslEnabled=true;keyStorePath=" + pki.wrongHostKeyStore()
                        + ";keyStorePassword=" + pki.password() + ";keyStoreType=PKCS12")
                .build().start();
        client = AmqpTestClient.connect(broker);
    }

    @AfterAll
    static void stopBroker() {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @BeforeEach
    void captureLog() {
        log = new StandardErrorTee();
    }

    @AfterEach
    void noSecretLogged() {
        log.close();
        assertThat(log.lines(pki.password())).as("log lines with the store password").isEmpty();
    }

    static ConnectionSettings.Builder tls(String acceptor) {
        return ConnectionSettings.builder(broker.host(), broker.port(acceptor))
                .trustStore(pki.trustStore().toString(), pki.password())
                .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(200));
    }

    static AmqpConsumer.Builder consumer(String name, ConnectionSettings settings, E2e.Effects effects) {
        return AmqpConsumer.builder()
                .name(name)
                .connection(settings)
                .store(InMemoryIdempotencyStore.ofDefaults())
                .subscribe(Subscription.builder("tls-" + name, e -> effects.record(e.id())).build());
    }

    /** Sends three messages to the consumer's queue over the plain acceptor and waits until they are handled. */
    void consumes(String name, ConnectionSettings settings) {
        E2e.Effects effects = new E2e.Effects();
        try (AmqpConsumer c = consumer(name, settings, effects).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> c.health().healthy());
            client.sendBatch("tls-" + name, 3, i -> name + "-" + i);
            await().atMost(Duration.ofSeconds(30)).until(() -> effects.total() == 3
                    && broker.messageCount("tls-" + name) == 0);
        }
        assertThat(effects.repeated()).isEmpty();
    }

    /**
     * Starts a consumer in the background with settings that cannot work, waits until it has FAILED, and checks that
     * this took one attempt, that {@code lastError} gives the reason and that exactly one log line does.
     *
     * @return the last error
     */
    String failsAtOnce(String name, ConnectionSettings settings, String reason) {
        try (AmqpConsumer c = consumer(name, settings, new E2e.Effects()).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> c.health().state() == ConsumerHealth.State.FAILED);
            String lastError = c.health().lastError();
            assertThat(lastError).startsWith("connection: ").contains(reason).doesNotContain(pki.password());
            assertThat(log.lines("'" + name + "'")).as("the consumer's log lines")
                    .noneMatch(l -> l.contains("next try in"))
                    .filteredOn(l -> l.contains(reason)).singleElement()
                    .satisfies(l -> assertThat(l).contains("ERROR").contains("after 1 attempt(s)"));
            assertThat(log.lines(reason)).as("every log line with the reason").hasSize(1);
            assertThat(log.lines("ERROR")).as("no other error line (the AMQP client's, for instance)")
                    .allMatch(l -> l.contains("'" + name + "'"));
            return lastError;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    // ------------------------------------------------------------------ what works

    @Test
    void aBrokerWhoseCertificateTheTrustStoreTrustsIsUsed() {
        consumes("trusted", tls("tls").build());
    }

    @Test
    void aJksTrustStoreWorksWithItsType() {
        consumes("jks", ConnectionSettings.builder(broker.host(), broker.port("tls"))
                .trustStore(pki.trustStoreJks().toString(), pki.password()).trustStoreType("JKS").build());
    }

    @Test
    void mutualTlsWithTheClientCertificateOfTheKeyStore() {
        consumes("mutual", tls("mtls").keyStore(pki.clientKeyStore().toString(), pki.password())
                .keyAlias("client").enabledProtocols("TLSv1.3", "TLSv1.2").build());
    }

    // ------------------------------------------------------------------ what fails at once, and why

    @Test
    void aBrokerCertificateFromAnotherAuthorityFailsTheConsumerAtOnce() {
        failsAtOnce("wrong-ca", tls("tls").trustStore(pki.otherTrustStore().toString(), pki.password()).build(),
                "the broker's certificate is not trusted");
    }

    @Test
    void aBrokerCertificateForAnotherHostFailsTheConsumerAtOnce() {
        String error = failsAtOnce("wrong-host", tls("wrong-host").build(), "does not name the host 127.0.0.1");
        assertThat(error).contains("verifyHost").doesNotContain("ClientConnectionRemotelyClosedException");
    }

    @Test
    void withoutHostVerificationTheSameCertificateIsAccepted() {
        consumes("no-verify", tls("wrong-host").verifyHost(false).build());
    }

    @Test
    void aBrokerThatWantsAClientCertificateAndGetsNoneFailsTheConsumerAtOnce() {
        failsAtOnce("no-client-cert", tls("mtls").build(), "refused the handshake");
    }

    @Test
    void aWrongKeyStorePasswordFailsTheConsumerAtOnce() {
        String wrong = "Wr0ng-" + pki.password();
        String error = failsAtOnce("wrong-password", tls("mtls").keyStore(pki.clientKeyStore().toString(), wrong)
                .build(), "the password is wrong");
        assertThat(error).contains(pki.clientKeyStore().toString()).doesNotContain(wrong);
        assertThat(log.lines(wrong)).isEmpty();
    }

    @Test
    void aTrustStoreFileThatDoesNotExistFailsTheConsumerAtOnce() {
        Path missing = pki.directory().resolve("no-such-trust.p12");
        failsAtOnce("missing-store", tls("tls").trustStore(missing.toString(), pki.password()).build(),
                missing + " does not exist");
    }

    @Test
    void aKeyAliasThatIsNotInTheStoreFailsTheConsumerAtOnce() {
        failsAtOnce("wrong-alias", tls("mtls").keyStore(pki.clientKeyStore().toString(), pki.password())
                .keyAlias("nobody").build(), "no private key entry named 'nobody'");
    }

    @Test
    void failFastStartThrowsWithTheSameReason() {
        Throwable failure = catchThrowable(() -> consumer("fail-fast",
                tls("tls").trustStore(pki.otherTrustStore().toString(), pki.password()).build(), new E2e.Effects())
                .failFastStart(true).start());
        assertThat(failure).isInstanceOf(AcemqException.class)
                .hasMessageContaining("cannot start consumer 'fail-fast'")
                .hasMessageContaining("the broker's certificate is not trusted");
        StringWriter trace = new StringWriter();
        failure.printStackTrace(new PrintWriter(trace));
        assertThat(trace.toString()).doesNotContain(pki.password());
    }

    // ------------------------------------------------------------------ no fall-back, and transient failures

    /**
     * A TLS client on Artemis' plain AMQP port: Artemis does not answer a TLS hello at all, so the attempt times out
     * like one to a broker that hangs, and is retried; it never talks plain AMQP, and a fail-fast start throws.
     */
    @Test
    void aTlsConsumerOnAPlainPortNeverConnects() {
        neverConnects("tls-on-plain", ConnectionSettings.builder(broker.host(), broker.port())
                .trustStore(pki.trustStore().toString(), pki.password()).openTimeout(Duration.ofSeconds(2)));
    }

    /** A plain client on the TLS port: the broker drops it; retried like any closed socket, never connected. */
    @Test
    void aPlainConsumerOnATlsPortNeverConnects() {
        neverConnects("plain-on-tls", ConnectionSettings.builder(broker.host(), broker.port("tls"))
                .openTimeout(Duration.ofSeconds(2)));
    }

    void neverConnects(String name, ConnectionSettings.Builder settings) {
        try (AmqpConsumer c = consumer(name, settings.reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(200))
                .build(), new E2e.Effects()).start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> log.lines("'" + name + "' cannot connect").size() >= 2);
            assertThat(c.health().connected()).isFalse();
            assertThat(c.health().state()).isEqualTo(ConsumerHealth.State.STARTING);
            assertThat(c.health().lastError()).startsWith("connection:");
        }
        assertThat(broker.consumerCount("tls-" + name)).as("no link was ever attached").isZero();
        Throwable failure = catchThrowable(() -> consumer(name + "-ff", settings.build(), new E2e.Effects())
                .failFastStart(true).start());
        assertThat(failure).isInstanceOf(AcemqException.class).hasMessageContaining("cannot start consumer");
    }

    @Test
    void aTlsBrokerThatIsNotThereYetIsRetriedAndUsedOnceItIsUp() throws Exception {
        int port = freePort();
        E2e.Effects effects = new E2e.Effects();
        try (AmqpConsumer c = consumer("late-tls", ConnectionSettings.builder(broker.host(), port)
                .trustStore(pki.trustStore().toString(), pki.password())
                .reconnectDelay(Duration.ofMillis(50), Duration.ofMillis(200)).build(), effects).start()) {
            await().atMost(Duration.ofSeconds(10)).until(() -> log.lines("'late-tls' cannot connect").size() >= 3);
            assertThat(c.health().state()).isEqualTo(ConsumerHealth.State.STARTING);
            try (EmbeddedArtemis tlsBroker = EmbeddedArtemis.builder().port(port)
                    .acceptorParameters("sslEnabled=true;keyStorePath=" + pki.brokerKeyStore() + ";keyStorePassword="
                            + pki.password() + ";keyStoreType=PKCS12").build().start()) {
                await().atMost(Duration.ofSeconds(30)).until(() -> c.health().healthy());
            }
        }
        assertThat(log.lines("gives up")).isEmpty();
    }

    @Test
    void settingsToStringShowsNoSecret() {
        ConnectionSettings s = tls("mtls").keyStore(pki.clientKeyStore().toString(), pki.password())
                .credentials("app", "app-" + pki.password()).build();
        assertThat(s.toString()).doesNotContain(pki.password()).contains("amqps://");
        assertThat(List.of(s.toString())).noneMatch(t -> t.contains("app-"));
    }
}
