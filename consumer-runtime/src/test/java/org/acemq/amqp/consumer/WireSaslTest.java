package org.acemq.amqp.consumer;

import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.store.inmemory.InMemoryIdempotencyStore;
import org.apache.qpid.protonj2.test.driver.ProtonTestServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The SASL mechanism on the wire: the one the settings allow, even when the broker prefers another, and a token from
 * the token credential in an {@code XOAUTH2} initial response. The scripts fail on any other SASL init.
 */
@Timeout(30)
class WireSaslTest {

    private static void expectAttachAndClose(ProtonTestServer peer) {
        peer.expectOpen().respond();
        peer.expectBegin().respond();
        peer.expectAttach().ofReceiver().respond();
        peer.expectFlow().withLinkCredit(10);
    }

    private static AmqpConsumer.Builder consumer(ProtonTestServer peer, ConnectionSettings settings) {
        return ScriptedPeer.consumer(peer, InMemoryIdempotencyStore.ofDefaults()).connection(settings)
                .subscribe(Subscription.builder("orders", e -> { }).concurrency(1).prefetch(9).build());
    }

    /** The broker offers SCRAM-SHA-256 first; with PLAIN the only mechanism allowed, the consumer sends PLAIN. */
    @Test
    void theAllowedMechanismIsUsedAlthoughTheBrokerPrefersAnother() throws Exception {
        try (ProtonTestServer peer = new ProtonTestServer()) {
            peer.expectSASLPlainConnect("app", "secret", "SCRAM-SHA-256", "PLAIN");
            expectAttachAndClose(peer);
            peer.start();
            try (AmqpConsumer consumer = consumer(peer, ScriptedPeer.settings(peer).credentials("app", "secret")
                    .saslMechanisms(SaslMechanism.PLAIN).build()).start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                ScriptedPeer.expectGracefulClose(peer, 0, 10);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }

    /** A token credential's token goes out as the XOAUTH2 bearer token, with the user name. */
    @Test
    void aTokenCredentialAuthenticatesWithXoauth2() throws Exception {
        String token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhcHAifQ.";
        try (ProtonTestServer peer = new ProtonTestServer()) {
            peer.expectSaslXOauth2Connect("app", token);
            expectAttachAndClose(peer);
            peer.start();
            try (AmqpConsumer consumer = consumer(peer, ScriptedPeer.settings(peer)
                    .tokenCredential("app", () -> AccessToken.of(token, Instant.now().plusSeconds(3600))).build())
                    .start()) {
                peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
                ScriptedPeer.expectGracefulClose(peer, 0, 10);
            }
            peer.waitForScriptToComplete(5, TimeUnit.SECONDS);
        }
    }
}
