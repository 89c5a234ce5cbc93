package org.acemq.amqp.consumer.internal.engine;

import java.util.Collection;
import org.apache.qpid.protonj2.buffer.ProtonBuffer;
import org.apache.qpid.protonj2.buffer.ProtonBufferAllocator;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.impl.ClientMessageSupport;
import org.apache.qpid.protonj2.codec.CodecFactory;
import org.apache.qpid.protonj2.codec.Encoder;
import org.apache.qpid.protonj2.codec.EncoderState;
import org.apache.qpid.protonj2.types.messaging.Section;

/**
 * What the runtime needs of protonj2's codec that the client API does not offer: decoding an encoded message
 * ({@code client.impl.ClientMessageSupport}, the client's own decoder), and encoding body sections with the default
 * encoder. Stateless; safe on any thread.
 */
final class Codec {

    private Codec() {
    }

    static Message<?> decode(byte[] encoded) throws ClientException {
        ProtonBuffer buffer = ProtonBufferAllocator.defaultAllocator().copy(encoded);
        return ClientMessageSupport.decodeMessage(buffer, null);
    }

    static ProtonBuffer encodeSections(Collection<Section<?>> sections) {
        Encoder encoder = CodecFactory.getDefaultEncoder();
        EncoderState state = encoder.newEncoderState();
        ProtonBuffer encoded = ProtonBufferAllocator.defaultAllocator().allocateHeapBuffer(256);
        for (Section<?> section : sections) {
            encoder.writeObject(encoded, state, section);
        }
        return encoded;
    }
}
