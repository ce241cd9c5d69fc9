/* ferry: the NBD stream format (doc/nbd-stream.md): encoders, and an
 * incremental parser that allocates nothing and accepts its input in
 * pieces of any size. */
#ifndef FERRY_NBD_STREAM_FORMAT_H
#define FERRY_NBD_STREAM_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STREAM_MAGIC "FERRYNBD"
#define STREAM_VERSION 1
/* The ranged stream of --streams (doc/nbd-stream.md, section 8). */
#define STREAM_VERSION_RANGES 2
#define STREAM_FLAG_DIGEST 1u
/* A delta stream: SAME records may appear; a parser accepts the flag only
 * when its user set allow_delta. */
#define STREAM_FLAG_DELTA 2u
/* CDATA records (zstd-compressed DATA) may appear; every reader takes it. */
#define STREAM_FLAG_COMPRESS 4u
#define STREAM_HEADER_SIZE 36
#define STREAM_RECORD_SIZE 24
#define STREAM_END_BODY_SIZE 68
/* What follows a CDATA record's header: its compressed size and CRC. */
#define STREAM_CDATA_TRAILER_SIZE 8
#define STREAM_MAX_DATA (64u * 1024 * 1024)
#define STREAM_BLOCK_SIZE 65536u
#define STREAM_DIGEST_SIZE 32

enum stream_record_type {
  STREAM_DATA = 1,
  STREAM_ZERO = 2,
  STREAM_END = 3,
  /* The ranged stream (version 2): a range's start and end, and the
   * messages that go the other way on its channel. */
  STREAM_RANGE = 4,
  STREAM_RANGE_END = 5,
  STREAM_REQUEST = 6,
  STREAM_DIGESTS = 7,
  STREAM_READY = 8,
  /* A sender stopped by a signal: the stream ends here, on a record's
   * boundary (length: the signal's number, SIGHUP, SIGINT or SIGTERM). */
  STREAM_STOP = 9,
  /* Delta streams. */
  STREAM_SAME = 16,           /* the destination already holds these blocks */
  /* Compressed streams. */
  STREAM_CDATA = 17,          /* DATA as a zstd frame, smaller than the data */
};

struct stream_header {
  uint32_t flags;             /* STREAM_FLAG_* */
  uint64_t size;              /* export size in bytes */
  uint32_t block_size;        /* zero detection and digest granularity */
};

struct stream_end {
  uint64_t data_records, zero_records;
  uint64_t data_bytes, zero_bytes;
  uint8_t digest[STREAM_DIGEST_SIZE];   /* all zero without STREAM_FLAG_DIGEST */
};

uint32_t stream_crc32c (const void *buf, size_t len);

/* Encoders: each fills exactly STREAM_HEADER_SIZE, STREAM_RECORD_SIZE
 * or STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE bytes of @out. */
void stream_encode_header (uint8_t *out, const struct stream_header *header);
/* The same with another version: STREAM_VERSION_RANGES. */
void stream_encode_header_version (uint8_t *out, const struct stream_header *header,
                                   uint32_t version);
void stream_encode_record (uint8_t *out, enum stream_record_type type,
                           uint64_t offset, uint64_t length);
void stream_encode_end (uint8_t *out, uint64_t size, const struct stream_end *end);
/* The ranged stream's RANGE_END record at @offset (the range's end), with
 * the range's counts and digest; the same size as END. */
void stream_encode_range_end (uint8_t *out, uint64_t offset, const struct stream_end *end);
/* A CDATA record at @offset of @length image bytes, whose payload is
 * @packed bytes of zstd: STREAM_RECORD_SIZE + STREAM_CDATA_TRAILER_SIZE
 * bytes. */
void stream_encode_cdata (uint8_t *out, uint64_t offset, uint64_t length, uint32_t packed);
/* A 24-byte record's fields, if its CRC is right. */
bool stream_decode_record (const uint8_t *in, uint32_t *type, uint64_t *offset,
                           uint64_t *length);

enum stream_event_kind {
  STREAM_EVENT_NONE,          /* the input is used up: feed more */
  STREAM_EVENT_HEADER,        /* parser->header is valid */
  STREAM_EVENT_DATA,          /* a piece of a DATA record's payload */
  STREAM_EVENT_ZERO,          /* a ZERO record */
  STREAM_EVENT_END,           /* the END record, checked; parser->end is valid */
  STREAM_EVENT_RANGE,         /* ranged: a RANGE record (offset, length) */
  STREAM_EVENT_RANGE_END,     /* ranged: its RANGE_END, counts checked; parser->end
                                 holds its body (the range's digest) */
  STREAM_EVENT_ERROR,         /* parser->error says what and where; sticky */
  STREAM_EVENT_SAME,          /* a SAME record (delta streams) */
  STREAM_EVENT_CDATA,         /* a piece of a CDATA record's compressed payload */
  STREAM_EVENT_STOP,          /* a STOP record: @offset, and @length the signal */
};

struct stream_event {
  enum stream_event_kind kind;
  uint64_t offset;            /* DATA: export offset of this piece; ZERO, SAME: of the record;
                                 CDATA: this piece's position in the payload */
  uint64_t length;            /* DATA, CDATA: bytes at @data; ZERO, SAME: the record's length */
  const uint8_t *data;        /* DATA, CDATA: points into the input fed */
  uint64_t record_offset;     /* DATA, CDATA: the whole record's offset and */
  uint64_t record_length;     /* length (of image bytes) */
  uint32_t packed_length;     /* CDATA: the whole payload's bytes */
};

enum stream_parser_state {
  STREAM_IN_HEADER,           /* collecting the stream header */
  STREAM_IN_RECORD,           /* collecting a record header */
  STREAM_IN_CDATA_TRAILER,    /* collecting a CDATA record's compressed size */
  STREAM_IN_PAYLOAD,          /* passing a DATA or CDATA payload through */
  STREAM_IN_END_BODY,         /* collecting the END body */
  STREAM_IN_DONE,             /* END seen: any further byte is an error */
  STREAM_IN_STOPPED,          /* STOP seen: the same */
  STREAM_IN_FAILED,
};

struct stream_parser {
  enum stream_parser_state state;
  uint8_t buf[STREAM_END_BODY_SIZE];   /* the fixed-size part being collected */
  size_t have;                /* bytes of it in @buf */
  uint64_t position;          /* stream bytes consumed so far */
  uint64_t next_offset;       /* where the next record must start */
  uint64_t record_offset;     /* the DATA or CDATA record whose payload is */
  uint64_t record_length;     /* passing */
  uint32_t packed_length;     /* CDATA: its payload's size; 0: DATA */
  uint64_t payload_left;      /* its bytes still to come */
  struct stream_header header;
  struct stream_end counted;  /* counts of the records seen so far */
  struct stream_end end;      /* the END record's body */
  char error[160];            /* with STREAM_IN_FAILED: the one-line reason */
  bool accept_ranges;         /* set by the caller: version 2 is welcome */
  bool ranged;                /* the header said version 2 */
  bool in_range;              /* between a RANGE and its RANGE_END */
  uint64_t range_end;         /* the open range's end */
  bool allow_delta;           /* set by the user before feeding: accept the
                                 DELTA flag (else refused like unknown flags) */
  uint32_t stop_signal;       /* a STOP record's signal; 0 before one */
};

void stream_parser_init (struct stream_parser *p);

/* Consume bytes from @buf[0..@len) up to the next event, which is stored
 * in @ev; returns how many bytes were consumed.  Call again with the rest
 * (for STREAM_EVENT_DATA the piece stays valid until then).  NONE means
 * that all of @len was consumed without completing anything. */
size_t stream_parser_feed (struct stream_parser *p, const uint8_t *buf, size_t len,
                           struct stream_event *ev);

/* The input has ended: true if the stream was complete (END seen), else
 * the parser fails with a message about truncation (or, after STOP, about
 * the stop). */
bool stream_parser_eof (struct stream_parser *p);

#endif
