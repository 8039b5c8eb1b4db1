// Netlist vs RTL of verif/gate/memtop.py, driven alike with random writes and reads over a small
// address window (collisions and re-reads are frequent); the first 600 cycles read the initial
// contents. A non-transparent read of a word written at the same edge is undefined on a block
// RAM and is not compared. Prints "DONE cycles N mismatches M collisions skipped K".
`timescale 1ns/1ps

module tb;
  reg clk = 0, rst = 1;
  reg [10:0] wa; reg [71:0] wd; reg [3:0] we, wen, ren; reg [10:0] ra0, ra1, ra2, ra3;
  wire [31:0] a0, a1, b0, b1; wire [71:0] a2, b2; wire [7:0] a3, b3; wire [15:0] a4, a5, b4, b5;
  mem_rtl r(.clk(clk), .rst(rst), .wa(wa), .wd(wd), .we(we), .wen(wen), .ra__0(ra0), .ra__1(ra1), .ra__2(ra2), .ra__3(ra3), .ren(ren),
            .q0(a0), .q1(a1), .q2(a2), .q3(a3), .q4(a4), .q5(a5));
  mem_gate g(.clk(clk), .rst(rst), .wa(wa), .wd(wd), .we(we), .wen(wen), .ra__0(ra0), .ra__1(ra1), .ra__2(ra2), .ra__3(ra3), .ren(ren),
            .q0(b0), .q1(b1), .q2(b2), .q3(b3), .q4(b4), .q5(b5));
  integer cyc, bad, coll;
  // a non-transparent read that collided with a write of its word: undefined on a block RAM
  reg c0, c2, c3, c4;
  wire [31:0] m0 = c0 ? 32'h0 : 32'hFFFFFFFF; wire [71:0] m2 = c2 ? 72'h0 : {72{1'b1}};
  wire [7:0] m3 = c3 ? 8'h0 : 8'hFF; wire [15:0] m4 = c4 ? 16'h0 : 16'hFFFF;
  always #5 clk = ~clk;
  initial begin
    bad = 0; coll = 0;
    wa = 0; wd = 0; we = 0; wen = 0; ren = 0; ra0 = 0; ra1 = 0; ra2 = 0; ra3 = 0;
    @(negedge clk); rst = 0;
    for (cyc = 0; cyc < 20000; cyc = cyc + 1) begin
      // small address windows so that collisions and re-reads happen often
      wa = $random & 11'h01F; wd = {$random, $random, $random}; we = $random; wen = $random; ren = $random | 4'b0101;
      ra0 = $random & 11'h01F; ra1 = $random & 11'h01F; ra2 = $random & 11'h01F; ra3 = $random & 11'h01F;
      if (cyc < 600) begin wen = 0; ra0 = cyc; ra1 = cyc; ra2 = cyc; ra3 = cyc; end   // read the init contents
      @(posedge clk);
      c0 = wen[0] && (we != 0) && ra0 == wa; c2 = wen[1] && ra2 == wa; c3 = wen[2] && ra3 == wa; c4 = wen[3] && ra0 == wa;
      coll = coll + (c0 | c2 | c3 | c4);
      @(negedge clk);
      if (cyc > 1 && {a0 & m0, a1, a2 & m2, a3 & m3, a4 & m4, a5} !== {b0 & m0, b1, b2 & m2, b3 & m3, b4 & m4, b5}) begin
        bad = bad + 1;
        if (bad < 10) $display("MISMATCH cycle %0d: rtl %h %h %h %h %h %h gate %h %h %h %h %h %h", cyc, a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5);
      end
    end
    $display("DONE cycles %0d mismatches %0d collisions skipped %0d", cyc, bad, coll);
    $finish;
  end
endmodule
