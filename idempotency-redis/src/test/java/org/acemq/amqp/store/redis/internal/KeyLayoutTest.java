package org.acemq.amqp.store.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import io.lettuce.core.cluster.SlotHash;

/**
 * The key layout: where a record lives must never move (a record is found only where it was written), the tags must
 * sit where the layout says, and a scope's records must spread over three thirds of the slots.
 */
class KeyLayoutTest {

    /** Each tag's slot, as Redis Cluster computes it (CRC16 mod 16384); tag i near the centre of slice i of 48. */
    private static final int[] SLOTS = {
        172, 511, 859, 1196, 1535, 1877, 2231, 2562, 2911, 3238, 3603, 3921, 4268, 4607, 4955, 5292,
        5640, 5979, 6294, 6658, 7009, 7334, 7692, 8017, 8356, 8697, 9043, 9397, 9721, 10083, 10414, 10749,
        11095, 11438, 11773, 12121, 12458, 12793, 13139, 13482, 13824, 14146, 14510, 14845, 15191, 15534, 15876, 16217};

    private final KeyLayout layout = new KeyLayout("acemq:idempotency:");

    @Test
    void keysAreWhereVersionTwoPutsThem() {
        // fixed forever: computed once, and by hand from the documented rule (zlib's crc32: scope mod 16, id mod 3)
        assertThat(layout.key("orders|s:order-1")).isEqualTo("acemq:idempotency:v2{ha}orders|s:order-1");
        assertThat(layout.key("orders|s:order-2")).isEqualTo("acemq:idempotency:v2{bt}orders|s:order-2");
        assertThat(layout.key("orders|s:order-3")).isEqualTo("acemq:idempotency:v2{c4}orders|s:order-3");
        assertThat(layout.key("payments|m:42")).isEqualTo("acemq:idempotency:v2{1u}payments|m:42");
        assertThat(layout.key("no-scope")).as("no separator: the empty scope")
                .isEqualTo("acemq:idempotency:v2{ka}no-scope");
    }

    @Test
    void eachTagSitsNearTheCentreOfItsSliceOfTheSlots() {
        assertThat(KeyLayout.TAGS).hasSize(SLOTS.length).doesNotHaveDuplicates();
        for (int i = 0; i < SLOTS.length; i++) {
            String tag = KeyLayout.TAGS.get(i);
            assertThat(tag).matches("[0-9a-z]{2}");
            int slot = SlotHash.getSlot(tag);
            assertThat(slot).as("slot of tag %s", tag).isEqualTo(SLOTS[i]);
            double centre = (i + 0.5) * 16384 / SLOTS.length;
            assertThat(Math.abs(slot - centre)).as("tag %s off the centre of slice %d", tag, i).isLessThan(30.0);
        }
    }

    @Test
    void aScopeUsesThreeSlotsOnePerThirdOfTheSlots() {
        for (String scope : List.of("orders", "payments", "audit", "q-17", "")) {
            Set<Integer> slots = new TreeSet<>();
            for (int i = 0; i < 3000; i++) {
                slots.add(SlotHash.getSlot(layout.key(scope + (scope.isEmpty() ? "k" : "|s:k") + i)));
            }
            assertThat(slots).as("scope '%s'", scope).hasSize(KeyLayout.SPREAD);
            Set<Integer> thirds = new HashSet<>();
            for (int slot : slots) {
                thirds.add(slot * 3 / 16384);
            }
            assertThat(thirds).as("scope '%s': slots %s", scope, slots).containsExactlyInAnyOrder(0, 1, 2);
        }
    }

    @Test
    void aScopesIdentifiersSpreadEvenlyOverItsThreeSlots() {
        Map<Integer, Integer> perSlot = new HashMap<>();
        int n = 30_000;
        for (int i = 0; i < n; i++) {
            perSlot.merge(SlotHash.getSlot(layout.key("orders|s:" + java.util.UUID.nameUUIDFromBytes(
                    Integer.toString(i).getBytes(java.nio.charset.StandardCharsets.UTF_8)))), 1, Integer::sum);
        }
        assertThat(perSlot).hasSize(3);
        // expected 10,000 each; a binomial standard deviation is about 82
        assertThat(perSlot.values()).allSatisfy(count -> assertThat(count).isBetween(9_500, 10_500));
    }

    @Test
    void manyScopesCoverEveryTagSoEveryMasterOfAnEvenSplit() {
        Set<String> tags = new HashSet<>();
        for (int s = 0; s < 400; s++) {
            for (int i = 0; i < 30; i++) {
                String key = layout.key("queue-" + s + "|s:" + i);
                tags.add(key.substring(key.indexOf('{') + 1, key.indexOf('}')));
            }
        }
        assertThat(tags).containsExactlyInAnyOrderElementsOf(KeyLayout.TAGS);
    }

    @Test
    void theFirstLayoutsKeysAreApartFromThisOnes() {
        KeyLayout odd = new KeyLayout("app*[1]?\\:");
        assertThat(odd.legacyKey("orders|s:a}b")).isEqualTo("app*[1]?\\:{orders|s:a}b}");
        assertThat(odd.legacyIdentifier(odd.legacyKey("orders|s:a}b"))).isEqualTo("orders|s:a}b");
        assertThat(odd.legacyPattern()).as("glob characters of the prefix escaped")
                .isEqualTo("app\\*\\[1\\]\\?\\\\:{*}");
        assertThat(layout.legacyPattern()).isEqualTo("acemq:idempotency:{*}");
        assertThat(layout.key("orders|s:a}")).as("a key of this layout never starts like one of the first")
                .doesNotStartWith("acemq:idempotency:{");
        assertThat(layout.markerKey()).isEqualTo("acemq:idempotency:layout");
    }
}
