package org.acemq.amqp.consumer.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.buffer.ProtonCompositeBuffer;
import org.apache.qpid.protonj2.buffer.netty.Netty4ProtonBufferAllocator;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.impl.ClientMessageSupport;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.Symbol;
import org.junit.jupiter.api.Test;

/** {@link WholePayload#join}: a payload of many pieces, which protonj2 1.1.0 cannot decode, decodes once joined. */
class WholePayloadTest {

    @Test
    void aPayloadOfManyPiecesThatProtonj2CannotDecodeIsDecodedOnceJoined() throws Exception {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < 40; i++) {
            map.put("k" + i, new Binary(new byte[] {(byte) i, 1, 2, 3, 4, 5, 6, 7}));
            map.put("s" + i, Symbol.valueOf("symbol-" + i));
        }
        ProtonBuffer whole = Message.create((Object) map).messageId("m-1").toAdvancedMessage().encode(null);
        byte[] encoded = new byte[whole.getReadableBytes()];
        whole.readBytes(encoded, 0, encoded.length);

        // the control: protonj2 1.1.0 on the pieces as they come from the frames (this fails until protonj2 is fixed)
        assertThatThrownBy(() -> ClientMessageSupport.decodeMessage(pieces(encoded, 100), a -> { }))
                .hasStackTraceContaining("IndexOutOfBoundsException");

        ProtonCompositeBuffer composite = pieces(encoded, 100);
        WholePayload.join(composite);

        assertThat(composite.componentCount()).isEqualTo(1);
        assertThat(composite.getReadableBytes()).isEqualTo(encoded.length);
        Message<?> decoded = ClientMessageSupport.decodeMessage(composite, a -> { });
        assertThat(decoded.messageId()).isEqualTo("m-1");
        assertThat(decoded.body()).isEqualTo(map);
    }

    private static ProtonCompositeBuffer pieces(byte[] encoded, int size) {
        List<ProtonBuffer> pieces = new ArrayList<>();
        for (int offset = 0; offset < encoded.length; offset += size) {
            int n = Math.min(size, encoded.length - offset);
            // Netty buffers, as the frames' payloads are (their copy checks a zero-length copy's index too)
            ProtonBuffer piece = Netty4ProtonBufferAllocator.UNPOOLED.allocate(n);
            piece.writeBytes(encoded, offset, n);
            pieces.add(piece.convertToReadOnly());
        }
        return Netty4ProtonBufferAllocator.UNPOOLED.composite(pieces.toArray(new ProtonBuffer[0]));
    }
}
