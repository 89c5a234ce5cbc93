package org.acemq.amqp.testsupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.testsupport.AmqpTestClient.ReceivedMessage;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link EmbeddedArtemisExtension} as test classes use it. Each scenario is a fixture class run through the JUnit
 * engine test kit, so that what happens after the fixture's tests (the broker stopped, the clients closed) can be
 * asserted too. The fixtures record the brokers they saw in {@link #SEEN}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EmbeddedArtemisExtensionIT {

    static final List<EmbeddedArtemis> SEEN = new CopyOnWriteArrayList<>();

    @Test
    void aStaticFieldSharesOneBrokerAmongTheTestsOfTheClassAndItsNestedClassesAndStopsItAfterThem() {
        SEEN.clear();
        Fixtures.run(SharedBroker.class).assertStatistics(s -> s.started(3).succeeded(3));
        assertThat(SEEN).hasSize(3);
        assertThat(SEEN.get(1)).isSameAs(SEEN.get(0));
        assertThat(SEEN.get(2)).isSameAs(SEEN.get(0));
        assertThat(SEEN.get(0).isRunning()).as("stopped after the class").isFalse();
    }

    @Test
    void anInstanceFieldGivesEveryTestABrokerOfItsOwn() {
        SEEN.clear();
        Fixtures.run(BrokerPerTest.class).assertStatistics(s -> s.started(2).succeeded(2));
        assertThat(SEEN).hasSize(2);
        assertThat(SEEN.get(1)).isNotSameAs(SEEN.get(0));
        assertThat(SEEN).allSatisfy(b -> assertThat(b.isRunning()).isFalse());
    }

    @Test
    void declaredWithExtendWithItInjectsTheBrokerAndAClientAndAppliesNoOptions() {
        SEEN.clear();
        Fixtures.run(Declared.class).assertStatistics(s -> s.started(1).succeeded(1));
        assertThat(SEEN).singleElement().satisfies(b -> {
            assertThat(b.maxDeliveryAttempts()).isEqualTo(3);
            assertThat(b.isRunning()).isFalse();
        });
    }

    @Test
    void theBuilderGivenToOfConfiguresTheBroker() {
        SEEN.clear();
        Fixtures.run(Configured.class).assertStatistics(s -> s.started(1).succeeded(1));
        assertThat(SEEN).singleElement().satisfies(b -> assertThat(b.maxDeliveryAttempts()).isEqualTo(7));
    }

    @Test
    void twoExtensionsOnOneClassRunTwoBrokers() {
        SEEN.clear();
        Fixtures.run(TwoBrokers.class).assertStatistics(s -> s.started(1).succeeded(1));
        assertThat(SEEN).hasSize(2);
        assertThat(SEEN.get(1)).isNotSameAs(SEEN.get(0));
        assertThat(SEEN.get(1).port()).isNotEqualTo(SEEN.get(0).port());
        assertThat(SEEN).allSatisfy(b -> assertThat(b.isRunning()).as("stopped after the class").isFalse());
    }

    static class TwoBrokers {
        @RegisterExtension
        static final EmbeddedArtemisExtension FIRST = EmbeddedArtemisExtension.withDefaults();

        @RegisterExtension
        static final EmbeddedArtemisExtension SECOND = EmbeddedArtemisExtension.withDefaults();

        @Test
        void seesTwo() {
            SEEN.add(FIRST.broker());
            SEEN.add(SECOND.broker());
            FIRST.client().send("only-on-first", AmqpTestClient.message("m-1", "one"));
            // the queue's count follows the accepted send asynchronously (Artemis updates it after routing)
            await().atMost(Duration.ofSeconds(30))
                    .untilAsserted(() -> assertThat(FIRST.broker().messageCount("only-on-first")).isEqualTo(1));
            assertThat(SECOND.broker().queueExists("only-on-first")).isFalse();
        }
    }

    @Test
    void outsideTheTestsThereIsNoBroker() {
        assertThatThrownBy(() -> EmbeddedArtemisExtension.withDefaults().broker())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("no embedded broker has been started yet")
                .hasMessageContaining("inside the tests of the class that registers this extension");
    }

    @Test
    void aTestCanStopTheBrokerAndStartItAgainThroughBrokerAndAfterTheClassBrokerSaysItWasClosed() {
        SEEN.clear();
        Fixtures.run(StoppedBroker.class).assertStatistics(s -> s.started(1).succeeded(1));
        assertThat(SEEN).singleElement().satisfies(b -> assertThat(b.isClosed()).isTrue());
        assertThatThrownBy(StoppedBroker.ARTEMIS::broker)
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the embedded broker of this extension was closed when its tests ended (after the class, "
                        + "or after the test for an instance field): broker() works only inside them");
    }

    // ---------------------------------------------------------------------------------------------------- fixtures

    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class SharedBroker {
        @RegisterExtension
        static final EmbeddedArtemisExtension ARTEMIS = EmbeddedArtemisExtension.withDefaults();

        @Test
        @Order(1)
        void parametersAreTheSharedBrokerAndAClientOfIt(EmbeddedArtemis broker, AmqpTestClient client) {
            SEEN.add(broker);
            assertThat(broker).isSameAs(ARTEMIS.broker());
            assertThat(ARTEMIS.host()).isEqualTo("127.0.0.1");
            assertThat(ARTEMIS.port()).isEqualTo(broker.port());
            client.send("shared", AmqpTestClient.message("m-1", "hello"));
            List<ReceivedMessage> received = ARTEMIS.client().receive("shared", 1, Duration.ofSeconds(30));
            assertThat(received).extracting(ReceivedMessage::messageId).containsExactly("m-1");
        }

        @Test
        @Order(2)
        void theClientsOfTheFirstTestWereClosedAfterIt() {
            EmbeddedArtemis broker = ARTEMIS.broker();
            SEEN.add(broker);
            await().atMost(Duration.ofSeconds(30)).until(() -> broker.connectionCount() == 0);
        }

        @Nested
        class Inner {
            @Test
            void seesTheOuterBroker() {
                SEEN.add(ARTEMIS.broker());
            }
        }
    }

    static class StoppedBroker {
        @RegisterExtension
        static final EmbeddedArtemisExtension ARTEMIS = EmbeddedArtemisExtension.withDefaults();

        @Test
        void stopsAndStartsIt() {
            EmbeddedArtemis broker = ARTEMIS.broker();
            SEEN.add(broker);
            int port = ARTEMIS.port();
            broker.stop();
            assertThat(ARTEMIS.broker()).as("still the broker, while stopped").isSameAs(broker);
            assertThat(ARTEMIS.broker().isRunning()).isFalse();
            assertThat(ARTEMIS.port()).isEqualTo(port);
            assertThatThrownBy(ARTEMIS::client).isInstanceOf(IllegalStateException.class)
                    .hasMessage("the embedded broker is stopped (a test stopped it): start it again with "
                            + "broker().start() before client()");
            ARTEMIS.broker().start();
            assertThat(ARTEMIS.port()).isEqualTo(port);
            ARTEMIS.client().send("restarted", AmqpTestClient.message("r-1", "back"));
            assertThat(ARTEMIS.client().receive("restarted", 1, Duration.ofSeconds(30)))
                    .extracting(ReceivedMessage::bodyAsString).containsExactly("back");
        }
    }

    static class BrokerPerTest {
        @RegisterExtension
        final EmbeddedArtemisExtension artemis = EmbeddedArtemisExtension.withDefaults();

        @Test
        void one() {
            SEEN.add(artemis.broker());
            assertThat(artemis.broker().isRunning()).isTrue();
        }

        @Test
        void two() {
            SEEN.add(artemis.broker());
            assertThat(artemis.broker().isRunning()).isTrue();
        }
    }

    @ExtendWith(EmbeddedArtemisExtension.class)
    static class Declared {
        @Test
        void roundTrip(EmbeddedArtemis broker, AmqpTestClient client) {
            SEEN.add(broker);
            client.send("declared", AmqpTestClient.message("d-1", "hi"));
            assertThat(client.receive("declared", 1, Duration.ofSeconds(30)))
                    .extracting(ReceivedMessage::bodyAsString).containsExactly("hi");
        }
    }

    static class Configured {
        @RegisterExtension
        static final EmbeddedArtemisExtension ARTEMIS =
                EmbeddedArtemisExtension.of(EmbeddedArtemis.builder().maxDeliveryAttempts(7));

        @Test
        void usesTheOptions() {
            SEEN.add(ARTEMIS.broker());
        }
    }
}
