/* stand-in: the file name is what the doctor reads */
