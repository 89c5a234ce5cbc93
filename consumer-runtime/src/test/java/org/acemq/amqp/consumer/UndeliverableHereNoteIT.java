package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A broker-behaviour note, not a runtime test: why the runtime settles poison messages with {@code rejected} and never
 * with {@code modified(delivery-failed=true, undeliverable-here=true)}.
 *
 * <p>AMQP 1.0 defines undeliverable-here as "do not redeliver this message to this link". Artemis 2.55 honours it by
 * keeping the message in the queue but excluding it from the link that gave it back: as long as that link stays
 * attached, the message is <em>stranded</em>. It is neither dead-lettered nor delivered, other messages keep flowing
 * past it, and the broker's delivery limit never fires because the message is never delivered again. Only when a
 * new link attaches (a restart, a reconnect, another consumer) does it come back, and then typically to start the same
 * cycle again. For a consumer that runs for weeks with one link, a poison message settled this way silently sits in
 * the queue for weeks. {@code rejected} moves the message to {@code DLQ.<queue>} at once, where an operator can see
 * and re-drive it; that is what the runtime sends for permanent failures and exhausted attempts (see
 * {@link RetryAndPoisonIT}).
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class UndeliverableHereNoteIT extends ArtemisTestBase {

    private static final Duration NOTHING_WITHIN = Duration.ofMillis(500);

    @Test
    void undeliverableHereStrandsTheMessageOnItsLinkWhileRejectDeadLettersItAtOnce() throws Exception {
        String q = "note-undeliverable-here";
        client.send(q, AmqpTestClient.message("poison-uh", "never works"));
        try (Client c = Client.create(); Connection conn = c.connect(broker.host(), broker.port())) {
            try (Receiver link = conn.openReceiver(q, new ReceiverOptions().autoAccept(false).creditWindow(10))) {
                Delivery d = link.receive(10, TimeUnit.SECONDS);
                assertThat(d).isNotNull();
                assertThat(d.message().messageId()).isEqualTo("poison-uh");
                d.modified(true, true);

                // Later traffic flows past it on the same link...
                client.send(q, AmqpTestClient.message("ok-1", "fine"), AmqpTestClient.message("ok-2", "fine"));
                for (String expected : new String[] {"ok-1", "ok-2"}) {
                    Delivery next = link.receive(10, TimeUnit.SECONDS);
                    assertThat(next).isNotNull();
                    assertThat(next.message().messageId()).isEqualTo(expected);
                    next.accept();
                }
                // ...but the poison message is stranded: still in the queue, not delivered, not dead-lettered,
                // although the link has credit and the broker's delivery limit (100) is far away.
                assertThat(link.receive(NOTHING_WITHIN.toMillis(), TimeUnit.MILLISECONDS)).isNull();
                await().until(() -> broker.messageCount(q) == 1);
                assertThat(broker.deliveringCount(q)).isZero();
                assertThat(broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q))).isZero();

                // Only a new link gets it back (and would fail on it again).
                try (Receiver another = conn.openReceiver(q, new ReceiverOptions().autoAccept(false)
                        .creditWindow(10))) {
                    Delivery again = another.receive(10, TimeUnit.SECONDS);
                    assertThat(again).isNotNull();
                    assertThat(again.message().messageId()).isEqualTo("poison-uh");
                    assertThat(again.message().deliveryCount()).isEqualTo(1);

                    // rejected: gone from the queue into DLQ.<queue> at once, nothing left circulating.
                    again.reject(Subscription.MAX_ATTEMPTS_CONDITION, "gave up");
                    await().until(() -> broker.messageCount(q) == 0
                            && broker.messageCount(EmbeddedArtemis.deadLetterQueueName(q)) == 1);
                    assertThat(another.receive(NOTHING_WITHIN.toMillis(), TimeUnit.MILLISECONDS)).isNull();
                }
            }
        }
        assertThat(client.drain(EmbeddedArtemis.deadLetterQueueName(q)))
                .extracting(ReceivedMessage::messageId).containsExactly("poison-uh");
    }
}
