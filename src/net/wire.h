/*
 * wire.h — the datagram header and its checks.
 *
 * Every datagram is one header plus up to DSM_NET_DATAGRAM bytes of payload.
 * The header names the job, the sender and receiver ranks, carries the
 * sender's sequence number for data, and piggybacks the cumulative and
 * selective acknowledgement of what the sender has received from the
 * receiver, and a freshness counter: the sender's count of datagrams it
 * has put on the wire to this receiver (retransmissions included), so that
 * a copy of an old datagram — duplicated by the network or replayed by
 * someone who captured it — is told from a new one and dropped before it
 * can pass for a sign of life (net/seqwin.h, struct fresh_window). The last
 * two fields authenticate the datagram:
 *   hmac = SipHash-2-4(k_hmac, header-before-hmac), in every mode;
 *   mac  = SipHash-2-4(k_hdr, header-before-mac || SipHash-2-4(k_pay, payload))
 *          in mac mode, and in token mode for the datagrams that change the
 *          job's life (wire_is_life: ABORT, DONE, LOOK, SEEN, the FIN and
 *          NOP markers);
 *          in token mode a message's fragment carries the job token,
 *          SipHash-2-4(k_hdr, job id), instead: its payload is not
 *          authenticated (the data path's cost), its header is.
 * So in token mode too no outsider who has seen the job's traffic can end
 * the job (a forged ABORT, DONE or FIN), keep a dead peer looking alive,
 * or cut a live one off (a made-up freshness counter or acknowledgement).
 * The receiver checks hmac before it reads the payload: a forged datagram
 * costs it one hash of 56 bytes, not of up to 64 KiB. mac still covers
 * every byte (hmac included), so what is accepted is authenticated as
 * before. Hashing the payload separately lets a retransmission (whose
 * piggybacked acks and counter differ) reuse the payload hash instead of
 * hashing the page again.
 * Byte order is the host's (little-endian on every supported machine); the
 * magic word, version and job id make a foreign or mismatched sender fail
 * the checks rather than be misread.
 */
#ifndef DSM_NET_WIRE_H
#define DSM_NET_WIRE_H
#include <stddef.h>
#include <stdint.h>

#include "net/siphash.h"

#define WIRE_MAGIC   0x314d5344u /* "DSM1" in memory order */

enum wire_kind {
    WIRE_DATA  = 1, /* sequenced, reliable: a fragment of a message */
    WIRE_ACK   = 2, /* acknowledgement only */
    WIRE_DONE  = 3, /* unsequenced: "I have finished and need nothing more" */
    WIRE_ABORT = 4, /* unsequenced: the sender is ending the job; payload = reason */
    /* Unsequenced: a host mate's look at a silent peer (supervise/witness.c),
     * asked ("look RANK") and answered ("seen RANK ..."); payload = the line. */
    WIRE_LOOK  = 5,
    WIRE_SEEN  = 6,
};

enum wire_flags {
    WIRE_FIRST = 1, /* first fragment of a message */
    WIRE_LAST  = 2, /* last fragment of a message */
    WIRE_NOP   = 4, /* sequenced heartbeat: no message, only proves liveness */
    WIRE_FIN   = 8, /* sequenced: the sender has finished; no message follows */
    /* Which copy arrived (RACK, net/seqwin.h rack_delivered_time): a
     * retransmission says so, and an acknowledgement says whether the
     * latest data datagram its sender read from us was one. */
    WIRE_RTX      = 16, /* WIRE_DATA: this transmission is a retransmission */
    WIRE_ECHO_RTX = 32, /* WIRE_DATA, WIRE_ACK: the latest one I read from you was a retransmission */
};

struct wire_hdr {
    uint32_t magic;
    uint16_t kind;
    uint16_t flags;
    uint64_t job;
    uint16_t src, dst;
    uint32_t len;       /* payload bytes in this datagram */
    uint32_t seq;       /* WIRE_DATA: sender's sequence number */
    uint32_t ack;       /* every seq before this has been received from dst */
    uint64_t sack;      /* bit i: seq ack+1+i has been received as well */
    uint32_t msg_len;   /* WIRE_DATA: length of the whole message */
    uint32_t frag_off;  /* WIRE_DATA: offset of this fragment in the message */
    uint64_t fresh;     /* freshness: 1, 2, 3, ... per sender and receiver */
    uint64_t hmac;      /* authenticates the header alone, checked first */
    uint64_t mac;       /* authenticates header and payload */
};
_Static_assert(sizeof(struct wire_hdr) == 72, "wire header layout");

#define WIRE_NH_WORDS 1024    /* 8 KiB blocks */

struct wire_keys {
    struct siphash_key hdr;   /* authenticates the header and the payload's hash */
    struct siphash_key hmac;  /* authenticates the header alone (derived) */
    struct siphash_key pay;   /* compresses the payload's NH outputs */
    uint64_t           nh[WIRE_NH_WORDS]; /* NH key, derived from the job key */
    uint64_t           token; /* token mode */
    int                mac;   /* 1: mac mode, 0: token mode */
};

/* Derives the keys from the job's secret key (32 bytes). */
void wire_keys_init(struct wire_keys *k, const uint8_t key[32], uint64_t job, int mac);

/* Whether h changes the job's life: ends it (WIRE_ABORT), says its sender
 * needs nothing more (WIRE_DONE) or has finished (WIRE_FIN), or proves a
 * silent peer alive (WIRE_NOP), or dead or alive (WIRE_LOOK, WIRE_SEEN).
 * These carry the full mac in every mode. */
int wire_is_life(const struct wire_hdr *h);

/* The payload hash h's seal needs (wire_seal): the keyed hash of the
 * payload where h's mac covers it (mac mode; the life datagrams in every
 * mode), else 0. */
uint64_t wire_payload_hash_of(const struct wire_keys *k, const struct wire_hdr *h,
                              const void *payload, size_t len);

/* The payload's keyed hash, in either mode (the UCX transport's life
 * messages, and its data in mac mode). */
uint64_t wire_payload_hash_full(const struct wire_keys *k, const void *payload, size_t len);

/* Hash of a message fragment's payload for the mac (0 in token mode). */
uint64_t wire_payload_hash(const struct wire_keys *k, const void *payload, size_t len);
/* The same hash of the concatenation a[0..alen) b[0..blen), without
 * copying it: a datagram whose payload lies in two places. */
uint64_t wire_payload_hash2(const struct wire_keys *k, const void *a, size_t alen, const void *b,
                            size_t blen);

/* Computes the header's hmac and mac fields, given the payload hash. */
void wire_seal(const struct wire_keys *k, struct wire_hdr *h, uint64_t payload_hash);

enum wire_verdict {
    WIRE_OK = 0,
    WIRE_FOREIGN,   /* too short, bad magic, other job, bad ranks, bad lengths */
    WIRE_FORGED,    /* well-formed but fails authentication (header or payload) */
};

/* Checks a received datagram of `len` bytes addressed to `self` in a job of
 * `nodes` nodes. Everything the rest of the transport relies on is checked
 * here: sizes, ranks, kind, fragment bounds. The payload is hashed only
 * once the header has passed all of them, its own mac included. */
enum wire_verdict wire_check(const struct wire_keys *k, const void *dgram, size_t len,
                             uint64_t job, int self, int nodes, size_t max_payload);

/* The reason an ABORT carries (its payload: len bytes, any of them), made
 * fit for a terminal: at most size-1 bytes, printable ASCII and whole
 * UTF-8 characters that print ("2 nodes × 2 threads" stays intact) —
 * every other byte, escape sequences' ESC and CSI (C0, C1, bytes of
 * invalid UTF-8), bidirectional controls' included, becomes '?' — and
 * always terminated. Returns the length written. size > 0. */
size_t wire_abort_reason(const void *payload, size_t len, char *out, size_t size);
#endif
