// Package answer holds what every API's answer to a turn shares, once: the
// turn read under the app.Turn contract (Reader: a finish only after the
// proven end, dense tool-call indexes, id and name on each call's first
// fragment), a whole turn collected for a JSON answer (Collect) and that
// answer written whole or not at all (WriteValue), a stream driven through
// its grammar's emitter (Stream, Drive: the headers wait for the first
// delta, a failure after them is the grammar's failure event), and the usage
// shown (Usage: reported, estimated or none, and how it was obtained, which
// the transport's access line reads back from the Reader).
//
// Each API's translation package (chatapi, respapi, msgapi, gemapi)
// renders its own JSON answer and drives its own emitter over these; the
// transport (adapters/httpapi) creates the Reader and hands each answer
// what it needs of the request (its clock, its failure rendering).
package answer
