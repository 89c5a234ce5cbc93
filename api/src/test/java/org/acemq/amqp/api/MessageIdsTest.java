package org.acemq.amqp.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class MessageIdsTest {

    @Test
    void nulAndUnpairedSurrogatesAreRefusedWithTheIdAndAPrintableMessage() {
        for (String bad : new String[] {"s:j-nul\u0000byte", "s:lone-high-\uD83D", "s:\uDE00-lone-low",
            "s:reversed-\uDE00\uD83D"}) {
            assertThatThrownBy(() -> MessageIds.requireValid(bad))
                    .isInstanceOfSatisfying(InvalidMessageIdException.class, e -> {
                        assertThat(e.messageId()).isSameAs(bad);
                        assertThat(e.getMessage()).contains("NUL characters or unpaired surrogates")
                                .doesNotContain("\u0000").doesNotContain("\uD83D").doesNotContain("\uDE00");
                    });
        }
        assertThat(MessageIds.requireValid("s:emoji-\uD83D\uDE00")).as("a surrogate pair is fine")
                .isEqualTo("s:emoji-\uD83D\uDE00");
        assertThat(MessageIds.requireValid("s:tab\tinside")).as("other control characters are storable")
                .isEqualTo("s:tab\tinside");
    }

    @Test
    void blankAndTooLongIdsAreInvalidMessageIdsToo() {
        assertThatThrownBy(() -> MessageIds.requireValid("\t\n"))
                .isInstanceOfSatisfying(InvalidMessageIdException.class,
                        e -> assertThat(e.messageId()).isEqualTo("\t\n"))
                .hasMessage("messageId must not be blank, but was '\\u0009\\u000A'");
        assertThatThrownBy(() -> MessageIds.requireValid("x".repeat(513)))
                .isInstanceOf(InvalidMessageIdException.class).hasMessageContaining("513");
    }

    @Test
    void firstUnstorableFindsTheFirstBadIndex() {
        assertThat(MessageIds.firstUnstorable("plain")).isEqualTo(-1);
        assertThat(MessageIds.firstUnstorable("")).isEqualTo(-1);
        assertThat(MessageIds.firstUnstorable("ab\u0000c\u0000")).isEqualTo(2);
        assertThat(MessageIds.firstUnstorable("\uD83D\uDE00ok")).isEqualTo(-1);
        assertThat(MessageIds.firstUnstorable("ok\uD83D")).isEqualTo(2);
        assertThat(MessageIds.firstUnstorable("\uDE00")).isZero();
        assertThat(MessageIds.firstUnstorable("\uD83D\uD83D\uDE00")).isZero();
        assertThat(MessageIds.firstUnstorable("\uFFFF\uE000")).as("above the surrogates").isEqualTo(-1);
    }

    @Test
    void printableEscapesControlCharactersAndLoneSurrogatesAndShortens() {
        assertThat(MessageIds.printable("s:order-1")).isEqualTo("s:order-1");
        assertThat(MessageIds.printable("s:j-nul\u0000byte")).isEqualTo("s:j-nul\\u0000byte");
        assertThat(MessageIds.printable("a\nb\u001b[31m\u007f\\")).isEqualTo("a\\u000Ab\\u001B[31m\\u007F\\\\");
        assertThat(MessageIds.printable("x\uD83D")).isEqualTo("x\\uD83D");
        assertThat(MessageIds.printable("\uD83D\uDE00")).isEqualTo("\uD83D\uDE00");
        assertThat(MessageIds.printable(null)).isEqualTo("null");
        assertThat(MessageIds.printable("y".repeat(300))).isEqualTo("y".repeat(100) + "…(300 chars)");
        assertThat(MessageIds.printable("y".repeat(99) + "\uD83D\uDE00" + "z"))
                .as("never cut inside a pair").isEqualTo("y".repeat(99) + "…(102 chars)");
    }
}
