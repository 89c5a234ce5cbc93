package org.acemq.amqp.store.inmemory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;

import org.acemq.amqp.api.Claim;
import org.acemq.amqp.api.IdempotencyStore.ClaimResult;
import org.acemq.amqp.testkit.MutableClock;
import org.junit.jupiter.api.Test;

/** Defaults, validation, owners and the edges of time arithmetic. */
class InMemoryIdempotencyStoreBuilderTest {

    @Test
    void defaultsAreTheDocumentedConstants() {
        assertThat(InMemoryIdempotencyStore.DEFAULT_LEASE).isEqualTo(Duration.ofSeconds(30));
        assertThat(InMemoryIdempotencyStore.DEFAULT_RETENTION).isEqualTo(Duration.ofHours(24));
        assertThat(InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES).isEqualTo(1_000_000L);
        assertThat(InMemoryIdempotencyStore.UNBOUNDED).isEqualTo(Long.MAX_VALUE);

        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        assertThat(store.leaseDuration()).isEqualTo(InMemoryIdempotencyStore.DEFAULT_LEASE);
        assertThat(store.retention()).isEqualTo(InMemoryIdempotencyStore.DEFAULT_RETENTION);
        assertThat(store.maxEntries()).isEqualTo(InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES);
        assertThat(store.owner()).isNotBlank();
        assertThat(store.expectedEntries()).as("no presizing unless asked").isZero();
        assertThat(InMemoryIdempotencyStore.builder().build().maxEntries()).isEqualTo(1_000_000L);
    }

    @Test
    void settingsAreApplied() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder()
                .lease(Duration.ofMinutes(2)).retention(Duration.ofHours(3)).maxEntries(42).owner("consumer-a")
                .build();
        assertThat(store.leaseDuration()).isEqualTo(Duration.ofMinutes(2));
        assertThat(store.retention()).isEqualTo(Duration.ofHours(3));
        assertThat(store.maxEntries()).isEqualTo(42);
        assertThat(store.owner()).isEqualTo("consumer-a");
        assertThat(store.toString()).contains("consumer-a", "PT2M", "PT3H", "maxEntries=42");
        assertThat(InMemoryIdempotencyStore.builder().maxEntries(InMemoryIdempotencyStore.UNBOUNDED).build()
                .toString()).contains("maxEntries=unbounded");
    }

    @Test
    void validationNamesTheSettingTheRuleAndTheValue() {
        InMemoryIdempotencyStore.Builder builder = InMemoryIdempotencyStore.builder();
        assertThatThrownBy(() -> builder.lease(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("lease must be > 0, but was PT0S");
        assertThatThrownBy(() -> builder.lease(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("lease must be > 0, but was PT-1S");
        assertThatThrownBy(() -> builder.lease(null))
                .isInstanceOf(NullPointerException.class).hasMessage("lease must not be null");
        assertThatThrownBy(() -> builder.retention(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("retention must be > 0, but was PT0S");
        assertThatThrownBy(() -> builder.retention(null))
                .isInstanceOf(NullPointerException.class).hasMessage("retention must not be null");
        assertThatThrownBy(() -> builder.maxEntries(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("maxEntries must be >= 1, but was 0");
        assertThatThrownBy(() -> builder.expectedEntries(-1))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("expectedEntries must be >= 0, but was -1");
        assertThatThrownBy(() -> InMemoryIdempotencyStore.builder().maxEntries(100).expectedEntries(101).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("expectedEntries must be <= maxEntries (100), but was 101");
        assertThatThrownBy(() -> builder.clock(null))
                .isInstanceOf(NullPointerException.class).hasMessage("clock must not be null");
        assertThatThrownBy(() -> builder.owner(" "))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("owner must not be blank, but was ' '");
        assertThatThrownBy(() -> builder.lease(Duration.ofMinutes(5)).retention(Duration.ofMinutes(1)).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("retention must be >= lease (PT5M), but was PT1M");
    }

    @Test
    void expectedEntriesIsAHintThatBoundsNothing() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder().maxEntries(1_000).expectedEntries(1_000)
                .build();
        assertThat(store.expectedEntries()).isEqualTo(1_000);
        assertThat(store.newPeer().expectedEntries()).as("peers share the one table").isEqualTo(1_000);
        assertThat(InMemoryIdempotencyStore.builder().expectedEntries(0).build().expectedEntries()).isZero();

        InMemoryIdempotencyStore small = InMemoryIdempotencyStore.builder()
                .maxEntries(InMemoryIdempotencyStore.UNBOUNDED).expectedEntries(4).build();
        for (int i = 0; i < 100; i++) {
            small.confirm(small.acquire("id-" + i));
        }
        assertThat(small.size()).as("more identifiers than expected are held all the same").isEqualTo(100);
        for (int i = 0; i < 100; i++) {
            assertThat(small.tryClaim("id-" + i)).isEqualTo(ClaimResult.ALREADY_CONFIRMED);
        }
    }

    @Test
    void aBuiltStoreDoesNotChangeWhenTheBuilderDoes() {
        InMemoryIdempotencyStore.Builder builder = InMemoryIdempotencyStore.builder().lease(Duration.ofSeconds(5));
        InMemoryIdempotencyStore store = builder.build();
        builder.lease(Duration.ofSeconds(7));
        assertThat(store.leaseDuration()).isEqualTo(Duration.ofSeconds(5));
        assertThat(builder.build().leaseDuration()).isEqualTo(Duration.ofSeconds(7));
        assertThat(builder.build().tryClaim("a")).as("every build has its own state").isEqualTo(ClaimResult.CLAIMED);
    }

    @Test
    void peersShareStateButNotOwnerUnlessNamedAlike() {
        InMemoryIdempotencyStore a = InMemoryIdempotencyStore.builder().owner("a").build();
        InMemoryIdempotencyStore alsoA = a.newPeer("a");
        InMemoryIdempotencyStore b = a.newPeer("b");
        InMemoryIdempotencyStore generated = a.newPeer();
        assertThat(generated.owner()).isNotIn("a", "b");
        assertThat(a.newPeer().owner()).isNotEqualTo(generated.owner());

        Claim claim = a.acquire("m");
        b.release("m");
        assertThat(b.release(claim)).isFalse();
        assertThat(generated.tryClaim("m")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(alsoA.release(claim)).as("the same owner name is the same owner").isTrue();
        assertThat(b.acquire("m").attempt()).isEqualTo(2);
        assertThatThrownBy(() -> a.newPeer(" ")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> a.newPeer(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void oneStateHoldsAtMost1023Owners() {
        InMemoryIdempotencyStore first = InMemoryIdempotencyStore.ofDefaults();
        for (int i = 2; i <= 1023; i++) {
            first.newPeer();
        }
        assertThatThrownBy(first::newPeer).isInstanceOf(IllegalStateException.class).hasMessageContaining("1023");
        assertThat(first.newPeer(first.owner()).owner()).as("an existing owner is no new one").isEqualTo(first.owner());
    }

    @Test
    void aClaimThatIsNotClaimedNamesNoLease() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        Claim refused = new Claim("a", ClaimResult.IN_PROGRESS, 0);
        assertThatThrownBy(() -> store.renew(refused)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("IN_PROGRESS");
        assertThatThrownBy(() -> store.release(refused)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.confirm(refused)).isInstanceOf(IllegalArgumentException.class);
        assertThat(store.isConfirmed("a")).isFalse();
    }

    @Test
    void inProgressReportsTheAttemptCountSoFar() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        store.release(store.acquire("a"));
        store.acquire("a");
        assertThat(store.newPeer().acquire("a")).isEqualTo(new Claim("a", ClaimResult.IN_PROGRESS, 2));
    }

    @Test
    void confirmedIdsKeepTheirAttemptCountUntilForgotten() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.ofDefaults();
        store.release(store.acquire("a"));
        store.confirm(store.acquire("a"));
        assertThat(store.attempts("a")).isEqualTo(2);
        assertThat(store.acquire("a")).isEqualTo(new Claim("a", ClaimResult.ALREADY_CONFIRMED, 2));
    }

    @Test
    void subMillisecondLeaseRoundsUpAndHugeDurationsDoNotOverflow() {
        MutableClock clock = MutableClock.create();
        InMemoryIdempotencyStore tiny = InMemoryIdempotencyStore.builder()
                .lease(Duration.ofNanos(1)).retention(Duration.ofNanos(1)).clock(clock).build();
        assertThat(tiny.leaseDuration()).isEqualTo(Duration.ofNanos(1));
        tiny.acquire("a");
        assertThat(tiny.newPeer().tryClaim("a")).as("within the same millisecond").isEqualTo(ClaimResult.IN_PROGRESS);
        clock.advance(Duration.ofMillis(1));
        assertThat(tiny.newPeer().tryClaim("a")).isEqualTo(ClaimResult.CLAIMED);

        InMemoryIdempotencyStore forever = InMemoryIdempotencyStore.builder()
                .lease(Duration.ofSeconds(Long.MAX_VALUE)).retention(Duration.ofSeconds(Long.MAX_VALUE))
                .clock(clock).build();
        forever.acquire("b");
        forever.confirm("c");
        clock.advance(Duration.ofDays(365L * 1000));
        assertThat(forever.newPeer().tryClaim("b")).isEqualTo(ClaimResult.IN_PROGRESS);
        assertThat(forever.isConfirmed("c")).isTrue();
    }

    @Test
    void worksWithTheSystemClockByDefault() {
        InMemoryIdempotencyStore store = InMemoryIdempotencyStore.builder().clock(Clock.systemUTC()).build();
        assertThat(store.claim("a")).isTrue();
        store.confirm("a");
        assertThat(store.isConfirmed("a")).isTrue();
    }
}
