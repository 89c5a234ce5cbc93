package org.acemq.amqp.store.redis.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32;

import org.acemq.amqp.api.MessageIds;

/**
 * Where an identifier's record lives: {@code <prefix>v2{<tag>}<identifier>}. The tag (the key's hash tag, so the key's
 * slot on a cluster) is one of {@link #TAGS}, chosen by the identifier's scope and a hash of the identifier:
 *
 * <ul>
 *   <li>each scope uses {@value #SPREAD} tags, and an identifier takes one of them by {@code CRC-32(identifier) mod
 *       3}. The runtime's batches hold one scope's identifiers, so a batch is at most three scripts on a cluster,
 *       whatever its size;</li>
 *   <li>the 48 tags sit at the centres of 48 equal slices of the 16,384 slots (tag {@code i} in slice {@code i}), and a
 *       scope's three are 16 slices apart: {@code rotation}, {@code rotation + 16}, {@code rotation + 32}, with
 *       {@code rotation = CRC-32(scope) mod 16}. On a cluster whose masters hold equal runs of slots (what
 *       {@code redis-cli --cluster create} does) a scope's three tags therefore fall on three different masters when
 *       there are three, and all scopes together cover every master evenly when the masters divide 48 (1, 2, 3, 4, 6,
 *       8, 12, 16, 24, 48).</li>
 * </ul>
 *
 * <p>CRC-32 is the one of {@code java.util.zip.CRC32} (and zlib's {@code crc32}) over the UTF-8 bytes; the scope is the
 * identifier up to its first {@code |} ({@link MessageIds#SCOPE_SEPARATOR}), empty when it has none. None of this may
 * ever change for version 2: a record is found only where it was written.
 *
 * <p>The first layout, {@code <prefix>{<identifier>}} (every identifier its own hash tag), is what {@link #legacyKey}
 * names; {@link LayoutMigration} moves its records here. The {@code v2} right after the prefix keeps the two apart: a
 * key of the first layout has a brace right after the prefix.
 */
public final class KeyLayout {

    /** The layout's version, as the layout marker records it. */
    public static final String VERSION = "2";
    /** How many tags, and so slots, one scope's records use. */
    public static final int SPREAD = 3;
    /** How many different sets of {@value #SPREAD} tags the scopes are spread over. */
    static final int ROTATIONS = 16;

    /**
     * The hash tags: tag {@code i} is the two-character string of {@code [0-9a-z]} whose slot (CRC16 mod 16384, as
     * Redis Cluster computes it) is nearest the centre of the slice {@code [i × 16384/48, (i + 1) × 16384/48)}. Fixed:
     * the test {@code KeyLayoutTest} holds the slot of each.
     */
    static final List<String> TAGS = List.of(
            "cr", "18", "sv", "g2", "5x", "og", "1t", "dj", "jy", "fl", "3r", "vh", "6x", "d2", "bt", "28",
            "pv", "f4", "1u", "uh", "ey", "3f", "iy", "gj", "bj", "ly", "6f", "5r", "h9", "4u", "c4", "uv",
            "ka", "gt", "q6", "3x", "k9", "9s", "cl", "oy", "5f", "4t", "r6", "dt", "zc", "vv", "ha", "fr");

    private final String prefix;
    private final String[] heads;

    /** @param prefix the store's key prefix (no braces: the builder checks) */
    public KeyLayout(String prefix) {
        this.prefix = prefix;
        this.heads = new String[TAGS.size()];
        for (int i = 0; i < heads.length; i++) {
            heads[i] = prefix + "v" + VERSION + "{" + TAGS.get(i) + "}";
        }
    }

    /**
     * @param messageId a valid identifier
     * @return the key of its record
     */
    public String key(String messageId) {
        return heads[tagIndex(messageId)] + messageId;
    }

    /**
     * @param messageId a valid identifier
     * @return the index in {@link #TAGS} of its tag
     */
    static int tagIndex(String messageId) {
        int bar = messageId.indexOf(MessageIds.SCOPE_SEPARATOR);
        int rotation = (int) (crc32(bar < 0 ? "" : messageId.substring(0, bar)) % ROTATIONS);
        int bucket = (int) (crc32(messageId) % SPREAD);
        return rotation + bucket * ROTATIONS;
    }

    /**
     * @param messageId a valid identifier
     * @return where the first layout kept its record: {@code <prefix>{<identifier>}}
     */
    public String legacyKey(String messageId) {
        return prefix + '{' + messageId + '}';
    }

    /**
     * @param legacyKey a key that {@link #legacyPattern()} matched
     * @return the identifier it holds the record of
     */
    public String legacyIdentifier(String legacyKey) {
        return legacyKey.substring(prefix.length() + 1, legacyKey.length() - 1);
    }

    /** @return the {@code SCAN MATCH} pattern of the first layout's keys under this prefix */
    public String legacyPattern() {
        StringBuilder pattern = new StringBuilder(prefix.length() + 4);
        for (int i = 0; i < prefix.length(); i++) {
            char c = prefix.charAt(i);
            if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
                pattern.append('\\');
            }
            pattern.append(c);
        }
        return pattern.append("{*}").toString();
    }

    /** @return the key of the marker saying that this prefix's records are in this layout: {@code <prefix>layout} */
    public String markerKey() {
        return prefix + "layout";
    }

    private static long crc32(String text) {
        CRC32 crc = new CRC32();
        crc.update(text.getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }
}
