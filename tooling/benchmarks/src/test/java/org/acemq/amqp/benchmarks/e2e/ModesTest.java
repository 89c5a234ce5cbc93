package org.acemq.amqp.benchmarks.e2e;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class ModesTest {

    @Test
    void durableDefaultsHaveEveryStoreRowAfterTheBaselines() {
        assertThat(Modes.resolve(null, true, 64, true)).containsExactly("raw", "raw-pool4", "memory-1", "memory-4",
                "spring-1", "spring-4", "camel-memory-4", "camel-jdbc-4", "postgres-default-4", "postgres-tuned-64",
                "mariadb-default-4", "camel-mariadb-4", "redis-default-4", "redis-cluster1-4",
                "redis-cluster3-4");
    }

    @Test
    void nonDurableDefaultsLeaveOutTheDatabaseAndCamelRows() {
        assertThat(Modes.resolve(null, false, 64, true))
                .containsExactly("raw", "raw-pool4", "memory-1", "memory-4", "spring-1", "spring-4");
    }

    @Test
    void groupsExpandOnceAndTheBaselinesAreAlwaysMeasured() {
        assertThat(Modes.resolve(List.of("spring", "spring-4", "postgres"), true, 32, true))
                .containsExactly("raw", "raw-pool4", "spring-1", "spring-4", "postgres-default-4", "postgres-tuned-32");
        assertThat(Modes.resolve(List.of("peers"), true, 64, true))
                .containsExactly("raw", "raw-pool4", "spring-1", "spring-4", "camel-memory-4", "camel-jdbc-4");
    }

    @Test
    void noPostgresDropsEveryRowThatNeedsTheDatabase() {
        assertThat(Modes.resolve(null, true, 64, false)).containsExactly("raw", "raw-pool4", "memory-1", "memory-4",
                "spring-1", "spring-4", "camel-memory-4", "mariadb-default-4", "camel-mariadb-4",
                "redis-default-4", "redis-cluster1-4", "redis-cluster3-4");
    }

    @Test
    void storeGroupsNameTheRowsOfEachServer() {
        assertThat(Modes.resolve(List.of("mariadb", "redis", "redis-cluster"), true, 64, true)).containsExactly("raw",
                "raw-pool4", "mariadb-default-4", "camel-mariadb-4", "redis-default-4", "redis-cluster1-4",
                "redis-cluster3-4");
        assertThat(Modes.resolve(List.of("stores"), true, 64, true)).containsExactly("raw", "raw-pool4",
                "mariadb-default-4", "camel-mariadb-4", "redis-default-4", "redis-cluster1-4",
                "redis-cluster3-4");
        assertThat(Modes.server("camel-mariadb-4")).isEqualTo(Modes.Server.MARIADB);
        assertThat(Modes.server("camel-jdbc-4")).isEqualTo(Modes.Server.POSTGRES);
        assertThat(Modes.server("redis-cluster3-4")).isEqualTo(Modes.Server.REDIS);
        assertThat(Modes.server("memory-4")).isNull();
        assertThat(Modes.redisMasters("redis-default-4")).isZero();
        assertThat(Modes.redisMasters("redis-cluster12-8")).isEqualTo(12);
        assertThat(Modes.threads("redis-cluster12-8")).isEqualTo(8);
        assertThat(Modes.baseline("redis-cluster1-4")).isEqualTo("raw-pool4");
    }

    @Test
    void threadCountsAndBaselines() {
        assertThat(Modes.threads("raw")).isEqualTo(1);
        assertThat(Modes.threads("raw-pool4")).isEqualTo(4);
        assertThat(Modes.threads("camel-jdbc-4")).isEqualTo(4);
        assertThat(Modes.threads("postgres-tuned-64")).isEqualTo(64);
        assertThat(Modes.baseline("memory-1")).isEqualTo("raw");
        assertThat(Modes.baseline("spring-4")).isEqualTo("raw-pool4");
        assertThat(Modes.baseline("postgres-tuned-64")).isEqualTo("raw-pool4");
        assertThat(Modes.usesPostgres("camel-jdbc-4")).isTrue();
        assertThat(Modes.usesPostgres("camel-memory-4")).isFalse();
    }

    @Test
    void theBatchGroupMeasuresBatchesOf100BesideSingleMessagesOnPostgres() {
        assertThat(Modes.resolve(List.of("batch"), true, 64, true))
                .containsExactly("raw", "raw-pool4", "postgres-default-4", "postgres-batch100-4");
        assertThat(Modes.batchSize("postgres-batch100-4")).isEqualTo(100);
        assertThat(Modes.batchSize("postgres-batch100-fp-off-4")).isEqualTo(100);
        assertThat(Modes.batchSize("postgres-default-4")).isZero();
        assertThat(Modes.threads("postgres-batch100-4")).isEqualTo(4);
        assertThat(Modes.threads("postgres-batch100-fp-off-4")).isEqualTo(4);
        assertThat(Modes.fingerprintOffTwin("postgres-batch100-4")).isEqualTo("postgres-batch100-fp-off-4");
        assertThat(Modes.server("postgres-batch100-4")).isEqualTo(Modes.Server.POSTGRES);
        assertThat(Modes.resolve(List.of("batch"), true, 64, false)).containsExactly("raw", "raw-pool4");
        assertThatThrownBy(() -> Modes.threads("postgres-batch0-4")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown mode postgres-batch0-4");
    }

    @Test
    void theSendGroupPutsEachSendingRowRightAfterItsConsumeOnlyRowOnPostgres() {
        assertThat(Modes.resolve(List.of("send"), true, 64, true)).containsExactly("raw", "raw-pool4",
                "postgres-default-4", "postgres-send-4", "postgres-tx-4", "postgres-tx-send-4");
        assertThat(Modes.resolve(List.of("send"), true, 64, false)).containsExactly("raw", "raw-pool4");
        for (String m : List.of("postgres-tx-4", "postgres-tx-send-4", "postgres-send-4")) {
            assertThat(Modes.threads(m)).isEqualTo(4);
            assertThat(Modes.server(m)).isEqualTo(Modes.Server.POSTGRES);
            assertThat(Modes.baseline(m)).isEqualTo("raw-pool4");
            assertThat(Modes.batchSize(m)).isZero();
        }
        assertThat(Modes.threads("postgres-tx-send-16")).isEqualTo(16);
        assertThat(Modes.sends("postgres-tx-send-4")).isEqualTo(1);
        assertThat(Modes.sends("postgres-send-4")).isEqualTo(1);
        assertThat(Modes.sends("postgres-tx-4")).isZero();
        assertThat(Modes.sends("postgres-default-4")).isZero();
        assertThat(Modes.transactional("postgres-tx-4")).isTrue();
        assertThat(Modes.transactional("postgres-tx-send-4")).isTrue();
        assertThat(Modes.transactional("postgres-send-4")).isFalse();
        assertThat(Modes.transactional("postgres-default-4")).isFalse();
        assertThat(Modes.consumeOnlyTwin("postgres-tx-send-4")).isEqualTo("postgres-tx-4");
        assertThat(Modes.consumeOnlyTwin("postgres-send-8")).isEqualTo("postgres-default-8");
        assertThatThrownBy(() -> Modes.consumeOnlyTwin("postgres-tx-4")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("postgres-tx-4 sends nothing");
        assertThatThrownBy(() -> Modes.threads("postgres-tx-send-0")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("mode postgres-tx-send-0 needs at least 1 thread");
        assertThatThrownBy(() -> Modes.threads("postgres-send-tx-4")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown mode postgres-send-tx-4");
    }

    @Test
    void sendingRowsHaveFingerprintOffTwinsThatKeepTheirPairing() {
        assertThat(Modes.fingerprintOffTwin("postgres-tx-send-4")).isEqualTo("postgres-tx-send-fp-off-4");
        assertThat(Modes.threads("postgres-tx-send-fp-off-4")).isEqualTo(4);
        assertThat(Modes.threads("postgres-send-fp-off-4")).isEqualTo(4);
        assertThat(Modes.sends("postgres-tx-send-fp-off-4")).isEqualTo(1);
        assertThat(Modes.consumeOnlyTwin("postgres-tx-send-fp-off-4")).isEqualTo("postgres-tx-fp-off-4");
        assertThat(Modes.consumeOnlyTwin("postgres-send-fp-off-4")).isEqualTo("postgres-default-fp-off-4");
    }

    @Test
    void unknownOrZeroThreadModesAreRefusedByName() {
        assertThatThrownBy(() -> Modes.resolve(List.of("kafka-4"), true, 64, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("unknown mode kafka-4");
        assertThatThrownBy(() -> Modes.threads("memory-0"))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("mode memory-0 needs at least 1 thread");
    }

    @Test
    void fingerprintOnAndOffPutEachAceMqRowsTwinRightAfterIt() {
        List<String> rows = Modes.resolve(List.of("memory", "spring-4", "postgres"), true, 64, true);
        assertThat(Modes.withFingerprint(rows, List.of("on", "off"))).containsExactly("raw", "raw-pool4", "memory-1",
                "memory-fp-off-1", "memory-4", "memory-fp-off-4", "spring-4", "postgres-default-4",
                "postgres-default-fp-off-4", "postgres-tuned-64", "postgres-tuned-fp-off-64");
        assertThat(Modes.withFingerprint(rows, List.of("off"))).containsExactly("raw", "raw-pool4", "memory-fp-off-1",
                "memory-fp-off-4", "spring-4", "postgres-default-fp-off-4", "postgres-tuned-fp-off-64");
        assertThat(Modes.withFingerprint(rows, List.of("on"))).isEqualTo(rows);
    }

    @Test
    void withoutTheFingerprintOptionRowsStayAsRequested() {
        List<String> rows = Modes.resolve(List.of("memory-4", "memory-fp-off-4"), true, 64, true);
        assertThat(rows).containsExactly("raw", "raw-pool4", "memory-4", "memory-fp-off-4");
        assertThat(Modes.withFingerprint(rows, null)).isSameAs(rows);
    }

    @Test
    void fingerprintOffRowsKeepTheirStoreThreadsAndBaseline() {
        assertThat(Modes.threads("memory-fp-off-1")).isEqualTo(1);
        assertThat(Modes.threads("postgres-tuned-fp-off-64")).isEqualTo(64);
        assertThat(Modes.baseline("memory-fp-off-1")).isEqualTo("raw");
        assertThat(Modes.baseline("memory-fp-off-4")).isEqualTo("raw-pool4");
        assertThat(Modes.usesPostgres("postgres-default-fp-off-4")).isTrue();
        assertThat(Modes.usesPostgres("memory-fp-off-4")).isFalse();
        assertThat(Modes.fingerprintOff("memory-fp-off-4")).isTrue();
        assertThat(Modes.fingerprintOff("memory-4")).isFalse();
        assertThat(Modes.fingerprintOffTwin("postgres-tuned-64")).isEqualTo("postgres-tuned-fp-off-64");
        assertThat(Modes.fingerprintOnTwin("postgres-tuned-fp-off-64")).isEqualTo("postgres-tuned-64");
        assertThatThrownBy(() -> Modes.threads("spring-fp-off-4")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown mode spring-fp-off-4");
        assertThatThrownBy(() -> Modes.fingerprintOffTwin("spring-4")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void twinsSwapPlacesInEveryEvenRoundSoNeitherSettingAlwaysRunsSecond() {
        List<String> rows = List.of("raw", "raw-pool4", "memory-1", "memory-fp-off-1", "spring-4", "memory-4",
                "memory-fp-off-4");
        assertThat(Modes.roundOrder(rows, 1)).isEqualTo(rows);
        assertThat(Modes.roundOrder(rows, 2)).containsExactly("raw", "raw-pool4", "memory-fp-off-1", "memory-1",
                "spring-4", "memory-fp-off-4", "memory-4");
        assertThat(Modes.roundOrder(rows, 3)).isEqualTo(rows);
        assertThat(Modes.roundOrder(List.of("raw", "memory-4", "spring-4"), 2))
                .containsExactly("raw", "memory-4", "spring-4");
    }
}
