package org.acemq.amqp.consumer.internal;

/** Message ids for log lines: control characters escaped, long ids shortened. Any publisher can choose an id. */
final class LogSafe {

    /** Longest id shown in a log line, in characters (before escaping). */
    static final int MAX_ID = 80;

    private LogSafe() {
    }

    /** Longest error text kept for log lines and health, in characters. */
    static final int MAX_TEXT = 1000;

    /**
     * @param text an error message that may quote a message id (store errors do)
     * @return it with control characters escaped, cut to {@value #MAX_TEXT} characters
     */
    static String text(String text) {
        if (text == null) {
            return null;
        }
        boolean clean = text.length() <= MAX_TEXT;
        for (int i = 0; clean && i < text.length(); i++) {
            char c = text.charAt(i);
            clean = c >= 0x20 && c != 0x7f && !(c >= 0x80 && c < 0xa0);
        }
        if (clean) {
            return text;
        }
        StringBuilder b = new StringBuilder(Math.min(text.length(), MAX_TEXT) + 16);
        for (int i = 0; i < text.length() && b.length() < MAX_TEXT; i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        if (b.length() >= MAX_TEXT) {
            b.append("...");
        }
        return b.toString();
    }

    /**
     * @param id a message id or key, possibly null
     * @return it with control characters, unpaired surrogates and backslashes escaped as {@code \\uXXXX}, cut to
     *     {@value #MAX_ID} characters with the number of characters left out
     */
    static String id(String id) {
        if (id == null) {
            return "null";
        }
        int shown = Math.min(id.length(), MAX_ID);
        StringBuilder b = new StringBuilder(shown + 16);
        for (int i = 0; i < shown; i++) {
            char c = id.charAt(i);
            if (c < 0x20 || c == 0x7f || c == '\\' || (c >= 0x80 && c < 0xa0) || Character.isSurrogate(c)
                    && !(Character.isHighSurrogate(c) && i + 1 < id.length()
                            && Character.isLowSurrogate(id.charAt(i + 1)))
                    && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(id.charAt(i - 1)))) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        if (id.length() > shown) {
            b.append("...(+").append(id.length() - shown).append(" chars)");
        }
        return b.toString();
    }
}
